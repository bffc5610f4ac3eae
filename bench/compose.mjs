#!/usr/bin/env node
// A 3-service task's start to its first command: berth's Docker backend (spec.services) against
// `docker compose up --detach --wait` + `docker compose exec` on the same services, measured side
// by side in the same run, printed as the ratio berth / compose (< 1: berth is faster; goal <= 1.0).
//
//   npm run bench:compose          (= bash bench/setup-compose.sh && npm run build && node bench/compose.mjs)
//   BENCH_REPS=1 node bench/compose.mjs
//
// The services: a database-like HTTP service with a healthcheck, an API waiting for it healthy,
// a worker waiting for the API started; the sandbox (compose's main) waits for all. Network 'none'
// for berth and an internal network for compose: nothing leaves either. Nothing is pulled. Every
// container and network made here is removed on the way out.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Docker from 'dockerode';
import { createDockerBackend } from '@berth/backend-docker';

const run = promisify(execFile);
const REPS = Number(process.env.BENCH_REPS ?? 5);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 1);
const IMAGE = process.env.BENCH_IMAGE || 'berth-test/busybox:latest';
const RUN_ID = `${process.pid}-${Date.now().toString(36)}`;
const LABELS = { 'berth.bench': '1', 'berth.bench.run': RUN_ID };

const http = (port, body) => ['sh', '-c', `mkdir -p /www && echo ${body} > /www/index.html && exec httpd -f -p ${port} -h /www`];
const HEALTH = ['wget', '-q', '-O', '/dev/null', 'http://127.0.0.1:5432/'];

/** The services as berth's spec has them. */
const SERVICES = {
  db: { image: IMAGE, command: http(5432, 'db'), ports: [5432], healthcheck: { command: HEALTH, intervalMs: 500, timeoutMs: 5000, retries: 20 } },
  api: { image: IMAGE, command: http(8080, 'api'), ports: [8080], dependsOn: { db: 'healthy' } },
  worker: { image: IMAGE, command: ['sleep', '100000'], dependsOn: { api: 'started' } },
};

/** The same, as a compose file. */
function composeFile() {
  const yaml = (argv) => JSON.stringify(argv);
  return `services:
  main:
    image: ${IMAGE}
    command: ["sleep", "100000"]
    depends_on:
      db: { condition: service_healthy }
      api: { condition: service_started }
      worker: { condition: service_started }
    labels: ${JSON.stringify(LABELS)}
  db:
    image: ${IMAGE}
    command: ${yaml(http(5432, 'db'))}
    healthcheck: { test: ${yaml(['CMD', ...HEALTH])}, interval: 500ms, timeout: 5s, retries: 20 }
    labels: ${JSON.stringify(LABELS)}
  api:
    image: ${IMAGE}
    command: ${yaml(http(8080, 'api'))}
    depends_on: { db: { condition: service_healthy } }
    labels: ${JSON.stringify(LABELS)}
  worker:
    image: ${IMAGE}
    command: ["sleep", "100000"]
    depends_on: { api: { condition: service_started } }
    labels: ${JSON.stringify(LABELS)}
networks:
  default:
    internal: true
    labels: ${JSON.stringify(LABELS)}
`;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

async function berthOnce(backend) {
  const began = performance.now();
  const env = await backend.start({ image: IMAGE, network: 'none', labels: LABELS, services: SERVICES });
  const r = await env.exec(['true']);
  const ms = performance.now() - began;
  if (r.exitCode !== 0) throw new Error(`berth: the first command exited ${r.exitCode}`);
  await env.teardown();
  return ms;
}

async function composeOnce(dir, n) {
  const project = `berth-bench-${RUN_ID}-${n}`;
  const base = ['compose', '-p', project, '-f', join(dir, 'docker-compose.yaml')];
  const began = performance.now();
  await run('docker', [...base, 'up', '--detach', '--wait', '--pull', 'never']);
  await run('docker', [...base, 'exec', '-T', 'main', 'true']);
  const ms = performance.now() - began;
  await run('docker', [...base, 'down', '--volumes', '--timeout', '0']);
  return ms;
}

async function cleanup() {
  const docker = new Docker();
  const label = [`berth.bench.run=${RUN_ID}`];
  for (const c of await docker.listContainers({ all: true, filters: { label } }))
    await docker
      .getContainer(c.Id)
      .remove({ force: true })
      .catch(() => undefined);
  for (const n of await docker.listNetworks({ filters: { label } }))
    await docker
      .getNetwork(n.Id)
      .remove()
      .catch(() => undefined);
}

async function main() {
  try {
    await run('docker', ['compose', 'version']);
  } catch {
    throw new Error('bench:compose needs the docker compose plugin: run bash bench/setup-compose.sh (it builds it from the Go module proxy)');
  }
  const dir = await mkdtemp(join(tmpdir(), 'berth-bench-compose-'));
  const backend = createDockerBackend({ pullPolicy: 'never' });
  const times = { berth: [], compose: [] };
  try {
    await writeFile(join(dir, 'docker-compose.yaml'), composeFile());
    for (let i = 0; i < WARMUP + REPS; i++) {
      // Interleaved, so both see the same machine.
      const b = await berthOnce(backend);
      const c = await composeOnce(dir, i);
      if (i >= WARMUP) {
        times.berth.push(b);
        times.compose.push(c);
      }
    }
  } finally {
    await cleanup();
    await rm(dir, { recursive: true, force: true });
  }
  const b = median(times.berth);
  const c = median(times.compose);
  console.log(`3-service task, start to first command (median of ${REPS}, ${WARMUP} warm-up):`);
  console.log(`  berth (spec.services)                  ${b.toFixed(0)} ms`);
  console.log(`  docker compose up --wait + exec        ${c.toFixed(0)} ms`);
  console.log(`  ratio berth / compose                  ${(b / c).toFixed(2)}x (goal <= 1.0)`);
}

await main();
