#!/usr/bin/env node
// Where the floor is for one big file through Docker's archive API, measured in one run.
//
//   npm run bench:floor        (= npm run build && node bench/docker-floor.mjs)
//   BENCH_FLOOR_REPS=15 BENCH_BIG_MIB=200 node bench/docker-floor.mjs
//
// Each direction is timed as a ladder, every rung doing a bit more of the real job, so that what
// each layer costs can be read off one run: the engine's speed (curl), the Node socket alone, Node's
// HTTP client, then the whole job done the plainest way with the same libraries berth uses
// (node:http + tar-stream + a file write stream: "the client floor"), berth, and `docker cp`.
// Per rung: median wall time, and the median CPU time this Node process spent (user + system),
// which is steadier than wall time on a shared machine. Rungs rotate which goes first each round,
// with `sync` before every rep. Everything is removed on the way out.
import { execFile as execFileCb, execFileSync } from 'node:child_process';
import { createReadStream, createWriteStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import { extract as tarExtract, pack as tarPack } from 'tar-stream';
import { createDockerBackend } from '@berth/backend-docker';

const execFile = promisify(execFileCb);
const SOCKET = process.env.DOCKER_SOCKET ?? '/var/run/docker.sock';
const REPS = Number(process.env.BENCH_FLOOR_REPS ?? 9);
const BIG_MIB = Number(process.env.BENCH_BIG_MIB ?? 200);
const MiB = 1024 * 1024;

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const work = mkdtempSync(join(tmpdir(), 'berth-floor-'));
const big = join(work, 'big.bin');
writeFileSync(big, randomBytes(BIG_MIB * MiB));
// The archive Docker would be sent for that file, built once: the upload ladder's rungs below
// berth send it as it is, so their figures hold no tar packing.
const bigTar = join(work, 'big.tar');
{
  const p = tarPack();
  const out = pipeline(p, createWriteStream(bigTar));
  const entry = p.entry({ name: 'up/big.bin', size: BIG_MIB * MiB, mode: 0o644 });
  await pipeline(createReadStream(big), entry);
  p.finalize();
  await out;
}

const backend = createDockerBackend({ pullPolicy: 'never' });
const env = await backend.start({ image: 'berth-test/busybox:latest', network: 'none', labels: { 'berth.bench': '1' } });
const id = env.id;

const archivePath = (path) => `/containers/${id}/archive?path=${encodeURIComponent(path)}`;
function request(method, path) {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath: SOCKET, path, method, headers: method === 'PUT' ? { 'content-type': 'application/x-tar' } : {} }, resolve);
    req.on('error', reject);
    if (method === 'GET') req.end();
    else resolve(req);
  });
}
async function finish(req) {
  const res = await new Promise((resolve, reject) => {
    req.on('response', resolve);
    req.on('error', reject);
  });
  res.resume();
  if (res.statusCode !== 200) throw new Error(`PUT answered ${res.statusCode}`);
}

const out = join(work, 'out.bin');
const download = {
  'curl to /dev/null': () => execFile('curl', ['-sf', '--unix-socket', SOCKET, `http://docker${archivePath('/src/big.bin')}`, '-o', '/dev/null']),
  'Node socket, bytes dropped': () =>
    new Promise((resolve, reject) => {
      const s = net.connect(SOCKET);
      s.on('connect', () => s.write(`GET ${archivePath('/src/big.bin')} HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n\r\n`));
      s.on('data', () => undefined);
      s.on('end', resolve);
      s.on('error', reject);
    }),
  'node:http, body dropped': async () => {
    const res = await request('GET', archivePath('/src/big.bin'));
    res.resume();
    await new Promise((resolve) => res.on('end', resolve));
  },
  'client floor (http+tar+write)': async () => {
    const res = await request('GET', archivePath('/src/big.bin'));
    const extract = tarExtract();
    const feeding = pipeline(res, extract);
    for await (const entry of extract) await pipeline(entry, createWriteStream(out, { highWaterMark: 4 * MiB }));
    await feeding;
  },
  'berth downloadFile': () => env.downloadFile('/src/big.bin', out),
  'docker cp': () => execFile('docker', ['cp', `${id}:/src/big.bin`, out]),
};
const upload = {
  'curl -T (tar prebuilt)': () => execFile('curl', ['-sf', '--unix-socket', SOCKET, '-T', bigTar, `http://docker${archivePath('/')}`]),
  'client floor (http, tar prebuilt)': async () => {
    const req = await request('PUT', archivePath('/'));
    const done = finish(req);
    await pipeline(createReadStream(bigTar, { highWaterMark: MiB }), req);
    await done;
  },
  'berth uploadFile': () => env.uploadFile(big, '/up/big.bin'),
  'docker cp': () => execFile('docker', ['cp', big, `${id}:/up/big.bin`]),
};

async function ladder(title, rungs, after) {
  const names = Object.keys(rungs);
  const wall = Object.fromEntries(names.map((n) => [n, []]));
  const cpu = Object.fromEntries(names.map((n) => [n, []]));
  for (const n of names) {
    await rungs[n]();
    await after();
  }
  for (let i = 0; i < REPS; i++) {
    for (let k = 0; k < names.length; k++) {
      const n = names[(k + i) % names.length];
      execFileSync('sync');
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      await rungs[n]();
      wall[n].push(performance.now() - t0);
      const c = process.cpuUsage(c0);
      cpu[n].push((c.user + c.system) / 1000);
      await after();
    }
  }
  const cp = median(wall['docker cp']);
  const floor = median(wall[names.find((n) => n.startsWith('client floor'))]);
  console.log(`\n${title} (${BIG_MIB} MiB, ${REPS} reps, median)`);
  console.log(`${'rung'.padEnd(34)} ${'wall'.padStart(9)} ${'/ docker cp'.padStart(11)} ${'/ floor'.padStart(8)} ${'Node CPU'.padStart(10)}`);
  for (const n of names) {
    const w = median(wall[n]);
    console.log(
      `${n.padEnd(34)} ${w.toFixed(0).padStart(6)} ms ${(w / cp).toFixed(2).padStart(10)}x ${(w / floor).toFixed(2).padStart(7)}x ${median(cpu[n]).toFixed(0).padStart(7)} ms`,
    );
  }
}

try {
  await env.exec(['sh', '-c', `mkdir -p /src /up && dd if=/dev/urandom of=/src/big.bin bs=1M count=${BIG_MIB} 2>/dev/null`]);
  console.log(`berth Docker transfer floor: one ${BIG_MIB} MiB file, container ${id.slice(0, 12)}`);
  await ladder('downloadFile', download, async () => rmSync(out, { force: true }));
  await ladder('uploadFile', upload, async () => {
    await env.exec(['rm', '-f', '/up/big.bin']);
  });
} finally {
  await env.teardown();
  rmSync(work, { recursive: true, force: true });
}
