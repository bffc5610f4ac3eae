#!/usr/bin/env node
// 1,000 sandboxes at once on the local Docker engine (issue 31, item 7), berth next to the Engine
// API used directly, in the same run, per network mode:
//   - standard: N create + start requests sent at once over the engine's socket (what
//     `docker run -d` does, without N CLI processes: 1,000 of them would take ~30 GB), then one
//     `docker rm -f <all N>` (the CLI removes 50 at a time);
//   - berth: N backend.start() at once, then N env.teardown() at once (berth queues both: 16
//     creations and 16 removals in flight, packages/backend-docker/src/engine-limits.ts).
// Per contender: start rate (N / time until the last started), p50/p95 start latency (call to
// running), teardown time, the runner's peak RSS, the engine's peak threads and memory, and the
// containerd-shims its containers left behind once removed (the engine's silent leak).
// Run: npm run bench:docker-scale (BENCH_SCALE_N=1000, BENCH_SCALE_NETWORKS=none,public)
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { promisify } from 'node:util';
import v8 from 'node:v8';
import vm from 'node:vm';
import { createDockerBackend } from '@berth/backend-docker';

const N = Number(process.env.BENCH_SCALE_N ?? 1000);
const NETWORKS = (process.env.BENCH_SCALE_NETWORKS ?? 'none,public').split(',');
const IMAGE = process.env.BENCH_IMAGE ?? 'berth-test/busybox:latest';
const SOCKET = (process.env.DOCKER_HOST ?? 'unix:///var/run/docker.sock').replace(/^unix:\/\//, '');
const RUN = randomBytes(4).toString('hex');
const LABEL = 'berth.bench-scale';
const run = promisify(execFile);

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc');

// ---------------------------------------------------------------------------- measuring

const nearest = (xs, q) => [...xs].sort((a, b) => a - b)[Math.max(0, Math.ceil(q * xs.length) - 1)];
const mib = (bytes) => bytes / 2 ** 20;

/** The engine's load while a contender runs: all threads on the machine (/proc/loadavg) and memory in use. */
function machine() {
  const threads = Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[3].split('/')[1]);
  const meminfo = readFileSync('/proc/meminfo', 'utf8');
  const kib = (key) => Number(meminfo.match(new RegExp(`^${key}:\\s+(\\d+)`, 'm'))[1]);
  return { threads, usedMiB: (kib('MemTotal') - kib('MemAvailable')) / 1024 };
}

/** Samples the runner's RSS and the machine every 100 ms until stopped; returns the peaks. */
function sampler() {
  gc();
  const peak = { rss: process.memoryUsage().rss, threads: 0, usedMiB: 0 };
  const take = () => {
    peak.rss = Math.max(peak.rss, process.memoryUsage().rss);
    const m = machine();
    peak.threads = Math.max(peak.threads, m.threads);
    peak.usedMiB = Math.max(peak.usedMiB, m.usedMiB);
  };
  const timer = setInterval(take, 100);
  return () => {
    clearInterval(timer);
    take();
    return peak;
  };
}

/** The containerd-shims serving any of `ids`, polled until none is left or 20 s passed (a shim exits just after its task is deleted). */
async function shimsLeft(ids) {
  const wanted = new Set(ids);
  const deadline = Date.now() + 20_000;
  for (;;) {
    let left = 0;
    for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
      let argv;
      try {
        argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      } catch {
        continue;
      }
      const at = argv.indexOf('-id');
      if (argv[0]?.endsWith('containerd-shim-runc-v2') && at >= 0 && wanted.has(argv[at + 1])) left++;
    }
    if (left === 0 || Date.now() >= deadline) return left;
    await new Promise((r) => setTimeout(r, 500));
  }
}

// ---------------------------------------------------------------------------- the Engine API, directly

const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });

function api(method, path, body) {
  return new Promise((resolve, reject) => {
    const data = body ? JSON.stringify(body) : undefined;
    const req = http.request(
      {
        socketPath: SOCKET,
        agent,
        method,
        path: `/v1.41${path}`,
        headers: data ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } : {},
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if ((res.statusCode ?? 500) >= 300) reject(new Error(`${method} ${path}: ${res.statusCode} ${text.trim()}`));
          else resolve(text ? JSON.parse(text) : undefined);
        });
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

/** `docker run -d` over the API: create, then start, N at once. */
async function standard(network) {
  const ids = [];
  const latencies = [];
  const errors = [];
  const stop = sampler();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: N }, async (_, i) => {
      const t = performance.now();
      try {
        const { Id } = await api('POST', `/containers/create?name=berth-bench-scale-${RUN}-${network}-${i}`, {
          Image: IMAGE,
          Cmd: ['sleep', '3600'],
          Labels: { [LABEL]: RUN },
          HostConfig: { NetworkMode: network === 'none' ? 'none' : 'bridge' },
        });
        ids.push(Id);
        await api('POST', `/containers/${Id}/start`);
        latencies.push(performance.now() - t);
      } catch (error) {
        errors.push(error.message);
      }
    }),
  );
  const startMs = performance.now() - t0;
  const startPeak = stop();
  const t1 = performance.now();
  if (ids.length) await run('docker', ['rm', '-f', ...ids], { maxBuffer: 64 * 2 ** 20 });
  const teardownMs = performance.now() - t1;
  return { name: 'Engine API (docker run -d), docker rm -f', latencies, errors, startMs, teardownMs, peak: startPeak, shims: await shimsLeft(ids) };
}

/** berth: N starts at once, then N teardowns at once. */
async function berth(network) {
  const backend = createDockerBackend({ pullPolicy: 'never', labels: { [LABEL]: RUN } });
  const envs = [];
  const latencies = [];
  const errors = [];
  const stop = sampler();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: N }, async () => {
      const t = performance.now();
      try {
        envs.push(await backend.start({ image: IMAGE, network }));
        latencies.push(performance.now() - t);
      } catch (error) {
        errors.push(`${error.name}: ${error.message}`);
      }
    }),
  );
  const startMs = performance.now() - t0;
  const startPeak = stop();
  const ids = (await api('GET', `/containers/json?all=1&filters=${encodeURIComponent(JSON.stringify({ label: [`${LABEL}=${RUN}`] }))}`)).map((c) => c.Id);
  const t1 = performance.now();
  const torn = await Promise.allSettled(envs.map((env) => env.teardown()));
  const teardownMs = performance.now() - t1;
  for (const r of torn) if (r.status === 'rejected') errors.push(`teardown: ${r.reason?.message}`);
  return { name: 'berth', latencies, errors, startMs, teardownMs, peak: startPeak, shims: await shimsLeft(ids) };
}

// ---------------------------------------------------------------------------- the run

function line(r) {
  const started = r.latencies.length;
  const rate = started / (r.startMs / 1000);
  return {
    rate,
    p50: nearest(r.latencies, 0.5),
    p95: nearest(r.latencies, 0.95),
    text: [
      r.name.padEnd(42),
      `${started}/${N}`.padStart(9),
      `${rate.toFixed(2)}/s`.padStart(9),
      `${(nearest(r.latencies, 0.5) / 1000).toFixed(1)} s`.padStart(9),
      `${(nearest(r.latencies, 0.95) / 1000).toFixed(1)} s`.padStart(9),
      `${(r.teardownMs / 1000).toFixed(1)} s`.padStart(10),
      `${mib(r.peak.rss).toFixed(0)} MiB`.padStart(10),
      `${r.peak.threads}`.padStart(8),
      `${(r.peak.usedMiB / 1024).toFixed(1)} GiB`.padStart(9),
      `${r.shims}`.padStart(6),
    ].join(' '),
  };
}

const startedAt = performance.now();
console.log(`berth docker scale bench: ${N} sandboxes at once per contender, networks ${NETWORKS.join(', ')}, image ${IMAGE}, run ${RUN}`);
console.log(`machine before: ${JSON.stringify(machine())}`);
try {
  for (const [i, network] of NETWORKS.entries()) {
    // Alternate who goes first: the engine slows as it holds more, and other load drifts.
    const order = i % 2 === 0 ? [standard, berth] : [berth, standard];
    const results = [];
    for (const contender of order) {
      const r = await contender(network);
      results.push(r);
      console.log(`  ${network}: ${r.name} done (${r.errors.length} errors${r.errors.length ? `, first: ${r.errors[0]}` : ''})`);
    }
    const std = results.find((r) => r.name !== 'berth');
    const b = results.find((r) => r.name === 'berth');
    console.log(`\nnetwork ${network}, ${N} at once (first: ${order[0].name})`);
    console.log(
      `${'contender'.padEnd(42)} ${'started'.padStart(9)} ${'rate'.padStart(9)} ${'p50'.padStart(9)} ${'p95'.padStart(9)} ${'teardown'.padStart(10)} ${'peak RSS'.padStart(10)} ${'threads'.padStart(8)} ${'mem used'.padStart(9)} ${'shims'.padStart(6)}`,
    );
    const s = line(std);
    const l = line(b);
    console.log(s.text);
    console.log(l.text);
    console.log(
      `ratio berth/standard (below 1: berth faster or smaller): all started ${(b.startMs / std.startMs).toFixed(2)}, p50 ${(l.p50 / s.p50).toFixed(2)}, p95 ${(l.p95 / s.p95).toFixed(2)}, teardown ${(b.teardownMs / std.teardownMs).toFixed(2)}, peak RSS ${(b.peak.rss / std.peak.rss).toFixed(2)}\n`,
    );
  }
} finally {
  // Whatever a failed contender left: by the run's label.
  const left = await api('GET', `/containers/json?all=1&filters=${encodeURIComponent(JSON.stringify({ label: [`${LABEL}=${RUN}`] }))}`);
  if (left.length) await run('docker', ['rm', '-f', ...left.map((c) => c.Id)], { maxBuffer: 64 * 2 ** 20 }).catch(() => undefined);
  console.log(`cleanup: ${left.length} container(s) of this run were left and removed; total ${((performance.now() - startedAt) / 1000).toFixed(0)} s`);
}
