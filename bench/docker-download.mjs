#!/usr/bin/env node
// A big download as a user's program gets it, against `docker cp` in the same run.
//
//   npm run bench:download     (= npm run build && node bench/docker-download.mjs)
//   BENCH_PROGRAMS=6 BENCH_REPS=4 BENCH_BIG_MIB=150 node bench/docker-download.mjs
//
// bench/docker-floor.mjs times each rung many times in one warm process, after a warm-up round,
// with the output file deleted between reps: the best case. A user's program is none of that: it
// starts, uploads its file with uploadFile, and downloads it a few times to the same path, the
// first download in a cold process. So here each round is a fresh Node process of exactly that
// shape (BENCH_PROGRAMS of them): one sandbox, uploadFile of a random file, then BENCH_REPS
// downloads with berth and with `docker cp` to the same local path, alternating which goes first,
// `sync` before each. Printed: the medians over every rep, and over the first rep of each program
// (the cold one), each as a ratio to docker cp.
import { execFile as execFileCb, execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const PROGRAMS = Number(process.env.BENCH_PROGRAMS ?? 6);
const REPS = Number(process.env.BENCH_REPS ?? 4);
const BIG_MIB = Number(process.env.BENCH_BIG_MIB ?? 150);

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** One user's program: what it prints on its last line is { berth: [ms...], cp: [ms...] }. */
async function userProgram(round) {
  const { createDockerBackend } = await import('@berth/backend-docker');
  const execFile = promisify(execFileCb);
  const work = mkdtempSync(join(tmpdir(), 'berth-download-'));
  const src = join(work, 'big.bin');
  writeFileSync(src, randomBytes(BIG_MIB * 1024 * 1024));
  const env = await createDockerBackend().start({ image: 'berth-test/busybox:latest', network: 'none', labels: { 'berth.bench': '1' } });
  try {
    await env.uploadFile(src, '/data/big.bin');
    const out = join(work, 'out.bin');
    const times = { berth: [], cp: [] };
    for (let i = 0; i < REPS; i++) {
      const order = (i + round) % 2 ? ['cp', 'berth'] : ['berth', 'cp'];
      for (const who of order) {
        execFileSync('sync');
        const t0 = performance.now();
        if (who === 'berth') await env.downloadFile('/data/big.bin', out);
        else await execFile('docker', ['cp', `${env.id}:/data/big.bin`, out]);
        times[who].push(performance.now() - t0);
      }
    }
    process.stdout.write(`${JSON.stringify(times)}\n`);
  } finally {
    await env.teardown();
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--program') {
  await userProgram(Number(process.argv[3]));
} else {
  const all = { berth: [], cp: [] };
  const first = { berth: [], cp: [] };
  for (let round = 0; round < PROGRAMS; round++) {
    const run = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--program', String(round)], { encoding: 'utf8' });
    if (run.status !== 0) throw new Error(`program ${round} failed: ${run.stderr}`);
    const times = JSON.parse(run.stdout.trim().split('\n').at(-1));
    for (const who of ['berth', 'cp']) {
      all[who].push(...times[who]);
      first[who].push(times[who][0]);
    }
  }
  const line = (label, xs) => {
    const b = median(xs.berth);
    const c = median(xs.cp);
    return `${label.padEnd(34)} ${b.toFixed(0).padStart(6)} ms ${c.toFixed(0).padStart(9)} ms ${(b / c).toFixed(2).padStart(7)}x`;
  };
  console.log(`berth downloadFile vs docker cp, ${BIG_MIB} MiB, as a user's program: ${PROGRAMS} programs x ${REPS} reps (median)`);
  console.log(`${''.padEnd(34)} ${'berth'.padStart(9)} ${'docker cp'.padStart(12)} ${'ratio'.padStart(8)}`);
  console.log(line(`every rep (${PROGRAMS * REPS})`, all));
  console.log(line(`first rep of each program (${PROGRAMS})`, first));
}
