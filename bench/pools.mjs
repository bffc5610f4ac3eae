#!/usr/bin/env node
// Warm pools and snapshots against the standard tools, measured side by side in the same run.
//
//   npm run bench:pools                    (= npm run build && node --expose-gc bench/pools.mjs)
//   BENCH_POOL_CLAIMS=20 BENCH_BACKENDS=docker node --expose-gc bench/pools.mjs
//
// Per backend (docker; k8s on the test cluster):
//   - time until the first command can run: the standard tool (docker run -d + exec; kubectl run +
//     wait + exec), berth's cold start (backend.start + exec), and a claim from a filled warm pool
//     (pool.claim + exec), p50 and p99, with ratios against the standard tool;
//   - client memory per idle pooled sandbox (heap and RSS, after GC, pool of BENCH_POOL_SIZE);
// Docker only: a snapshot to a started sandbox (env.snapshot + start from it) against docker commit
// + docker run -d. Everything is removed on the way out.
import { execFile as execFileCb } from 'node:child_process';
import { promisify } from 'node:util';
import { createDockerBackend } from '@berth/backend-docker';
import { createK8sBackend } from '@berth/backend-k8s';

const execFile = promisify(execFileCb);

function intFromEnv(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a whole number of at least 1, got "${raw}"`);
  return n;
}

const CLAIMS = intFromEnv('BENCH_POOL_CLAIMS', 40);
const COLD = intFromEnv('BENCH_POOL_COLD', 10);
const POOL_SIZE = intFromEnv('BENCH_POOL_SIZE', 10);
const BACKENDS = (process.env.BENCH_BACKENDS ?? 'docker,k8s').split(',').map((s) => s.trim());
const IMAGE = 'berth-test/busybox:latest';
const STATE = process.env.BERTH_KUBE_STATE ?? '/var/lib/berth-kube';
const KUBECONFIG = `${STATE}/berth.kubeconfig`;
const NAMESPACE = 'berth-test';
const TOLERATIONS = [{ key: 'berth.test/fault', operator: 'Exists', effect: 'NoSchedule' }];

const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};
const ms = (n) => `${n.toFixed(1)} ms`;
const line = (label, values, reference) => {
  const p50 = quantile(values, 0.5);
  const p99 = quantile(values, 0.99);
  const ratio = reference ? `   ${(p50 / quantile(reference, 0.5)).toFixed(3)}x / ${(p99 / quantile(reference, 0.99)).toFixed(3)}x the standard tool` : '';
  console.log(`  ${label.padEnd(44)} p50 ${ms(p50).padStart(10)}  p99 ${ms(p99).padStart(10)}  (n=${values.length})${ratio}`);
};
async function timed(fn) {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}
/** A full collection, settled: several passes with a turn of the event loop between them. */
async function gcNow() {
  for (let i = 0; i < 4; i++) {
    globalThis.gc?.();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Cleanup of what the standard tool made, by name. */
const made = [];

async function dockerStandard() {
  const times = [];
  for (let i = 0; i < COLD; i++) {
    const name = `berth-bench-pool-${process.pid}-${i}`;
    made.push(['docker', name]);
    times.push(
      await timed(async () => {
        await execFile('docker', ['run', '-d', '--network', 'none', '--label', 'berth.bench=true', '--name', name, IMAGE, 'sleep', '3600']);
        await execFile('docker', ['exec', name, 'true']);
      }),
    );
    await execFile('docker', ['rm', '-f', name]);
  }
  return times;
}

async function kubectlStandard() {
  const kubectl = (...args) => execFile('kubectl', ['--kubeconfig', KUBECONFIG, '-n', NAMESPACE, ...args]);
  const overrides = JSON.stringify({
    spec: { tolerations: TOLERATIONS, containers: [{ name: 'c', image: IMAGE, imagePullPolicy: 'Never', command: ['sleep', '3600'] }] },
  });
  const times = [];
  for (let i = 0; i < COLD; i++) {
    const name = `berth-bench-pool-${process.pid}-${i}`;
    made.push(['k8s', name]);
    times.push(
      await timed(async () => {
        await kubectl('run', name, `--image=${IMAGE}`, '--restart=Never', '--labels=berth.bench=true', `--overrides=${overrides}`);
        await kubectl('wait', '--for=condition=Ready', `pod/${name}`, '--timeout=120s');
        await kubectl('exec', name, '--', 'true');
      }),
    );
    await kubectl('delete', 'pod', name, '--grace-period=0', '--wait=false');
  }
  return times;
}

async function benchBackend(name, backend, standard, spec) {
  console.log(`\n${name}: time until the first command runs`);
  const reference = await standard();
  line(name === 'docker' ? 'docker run -d + docker exec' : 'kubectl run + wait Ready + kubectl exec', reference);
  const cold = [];
  for (let i = 0; i < COLD; i++) {
    let env;
    cold.push(
      await timed(async () => {
        env = await backend.start(spec);
        await env.exec(['true']);
      }),
    );
    await env.teardown();
  }
  line('berth cold start (backend.start + exec)', cold, reference);

  const pool = backend.pool(spec, { size: POOL_SIZE });
  try {
    await pool.fill();
    const claims = [];
    for (let i = 0; i < CLAIMS; i++) {
      // Claims come as trials do: each after the pool has refilled (a steady state, not a burst).
      await pool.fill();
      let env;
      claims.push(
        await timed(async () => {
          env = await pool.claim();
          await env.exec(['true']);
        }),
      );
      await env.teardown();
    }
    line(`berth warm pool of ${POOL_SIZE} (claim + exec)`, claims, reference);
    const claimOnly = [];
    for (let i = 0; i < Math.min(CLAIMS, 20); i++) {
      await pool.fill();
      let env;
      claimOnly.push(await timed(async () => (env = await pool.claim())));
      await env.teardown();
    }
    line('berth claim alone (alive check included)', claimOnly);
  } finally {
    await pool.close();
  }

  // Client memory per idle pooled sandbox: an empty pool against a full one, after GC.
  await gcNow();
  const before = process.memoryUsage();
  const idle = backend.pool(spec, { size: POOL_SIZE });
  try {
    await idle.fill();
    await gcNow();
    const after = process.memoryUsage();
    const per = (k) => ((after[k] - before[k]) / POOL_SIZE / 1024).toFixed(1);
    console.log(
      `  client memory per idle pooled sandbox: heap ${per('heapUsed')} KiB (pool of ${POOL_SIZE}, after GC; RSS moves by whole pages and says little here)`,
    );
  } finally {
    await idle.close();
  }
}

async function dockerSnapshot(backend) {
  console.log('\ndocker: from a snapshot to a started sandbox that ran a command');
  const reference = [];
  const berth = [];
  for (let i = 0; i < COLD; i++) {
    const source = `berth-bench-snap-${process.pid}-${i}`;
    const copy = `${source}-copy`;
    const tag = `berth-bench-snap:${process.pid}-${i}`;
    made.push(['docker', source], ['docker', copy], ['image', tag]);
    await execFile('docker', ['run', '-d', '--network', 'none', '--label', 'berth.bench=true', '--name', source, IMAGE, 'sleep', '3600']);
    await execFile('docker', ['exec', source, 'sh', '-c', 'mkdir -p /opt && echo set-up > /opt/marker']);
    reference.push(
      await timed(async () => {
        await execFile('docker', ['commit', source, tag]);
        await execFile('docker', ['run', '-d', '--network', 'none', '--label', 'berth.bench=true', '--name', copy, tag, 'sleep', '3600']);
        await execFile('docker', ['exec', copy, 'cat', '/opt/marker']);
      }),
    );
    await execFile('docker', ['rm', '-f', source, copy]);
    await execFile('docker', ['rmi', tag]);

    const env = await backend.start({ image: IMAGE, network: 'none' });
    await env.exec('mkdir -p /opt && echo set-up > /opt/marker');
    let snapshot;
    let started;
    berth.push(
      await timed(async () => {
        snapshot = await env.snapshot();
        started = await backend.start({ image: snapshot.ref, network: 'none' });
        await started.exec(['cat', '/opt/marker']);
      }),
    );
    await started.teardown();
    await env.teardown();
    await snapshot.remove();
  }
  line('docker commit + docker run -d + exec', reference);
  line('berth env.snapshot() + start + exec', berth, reference);
}

async function cleanUp() {
  for (const [kind, name] of made.splice(0)) {
    if (kind === 'docker') await execFile('docker', ['rm', '-f', name]).catch(() => undefined);
    if (kind === 'image') await execFile('docker', ['rmi', '-f', name]).catch(() => undefined);
    if (kind === 'k8s')
      await execFile('kubectl', ['--kubeconfig', KUBECONFIG, '-n', NAMESPACE, 'delete', 'pod', name, '--ignore-not-found', '--grace-period=0']).catch(
        () => undefined,
      );
  }
}

process.once('SIGINT', () => void cleanUp().finally(() => process.exit(130)));
console.log(
  `berth pools bench: ${COLD} cold starts, ${CLAIMS} claims, pools of ${POOL_SIZE}, backends ${BACKENDS.join(', ')}; load average ${(await import('node:os'))
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
try {
  if (BACKENDS.includes('docker')) {
    const docker = createDockerBackend();
    await benchBackend('docker', docker, dockerStandard, { image: IMAGE, network: 'none' });
    await dockerSnapshot(docker);
  }
  if (BACKENDS.includes('k8s')) {
    const k8s = createK8sBackend({ kubeconfig: { file: KUBECONFIG }, namespace: NAMESPACE, tolerations: TOLERATIONS });
    await benchBackend('k8s', k8s, kubectlStandard, { image: IMAGE, network: 'public' });
  }
} finally {
  await cleanUp();
}
