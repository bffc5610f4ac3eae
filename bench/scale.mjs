#!/usr/bin/env node
// 10,000 sandboxes from one runner on the scale test bed (test/kube/scale: a second control plane
// on loopback whose 1,000 nodes are kwok's fakes; `bash test/setup/setup.sh` starts it). In one run:
//   1. without berth: N bare pods created by client-node, CONCURRENCY at a time (the raw create
//      rate), and the time until all are Running (watched): the cluster's own rate;
//   2. berth, network 'public': N backend.start() at once (the backend's default limits), the
//      start rate (ratio against 1.'s Running rate), API connections (a TCP relay counts them),
//      peak RSS per live sandbox, heap per handle, a dry-run sweep, teardown of all, and the start
//      phases' p50/p95/p99 (Environment.startTimings);
//   3. the same on network 'none' (declared enforced: kwok cannot run the in-pod probe);
//   4. a runner holding N sandboxes killed with SIGKILL: how long until its guardian left nothing.
// Run: npm run build && node --expose-gc bench/scale.mjs   (BENCH_SCALE_SANDBOXES=10000, BENCH_SCALE_CONCURRENCY=256)
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createConnection, createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, KubeConfig, Watch } from '@kubernetes/client-node';
import { SESSION_ID, phaseStats, startPhases } from '@berth/core';
import { createK8sBackend } from '@berth/backend-k8s';

const N = Number(process.env.BENCH_SCALE_SANDBOXES ?? 10_000);
const CONCURRENCY = Number(process.env.BENCH_SCALE_CONCURRENCY ?? 256);
// berth runs with the backend's defaults (128 starts in flight) unless BENCH_SCALE_BERTH_CONCURRENCY sets its creation limit.
const CREATION = process.env.BENCH_SCALE_BERTH_CONCURRENCY ? { creation: { maxConcurrent: Number(process.env.BENCH_SCALE_BERTH_CONCURRENCY) } } : {};
const STATE = process.env.BERTH_KUBE_SCALE_STATE ?? '/var/lib/berth-kube-scale';
const NAMESPACE = 'berth-scale';
const IMAGE = 'berth-test/busybox:latest';
const berthKubeconfig = `${STATE}/berth.kubeconfig`;
const adminKubeconfig = `${STATE}/admin.kubeconfig`;

const s = (ms) => `${(ms / 1000).toFixed(1)} s`;
const mib = (bytes) => `${Math.round(bytes / 1024 / 1024)} MiB`;

/** Runs `work(i)` for i < n, `limit` at a time. */
async function pool(n, limit, work) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, n) }, async () => {
      while (next < n) await work(next++);
    }),
  );
}

function adminApi() {
  const kc = new KubeConfig();
  kc.loadFromFile(adminKubeconfig);
  return kc.makeApiClient(CoreV1Api);
}

/** Pods of a selector until none is left; ms it took. */
async function waitEmpty(selector, limitMs) {
  const api = adminApi();
  const t0 = performance.now();
  for (;;) {
    const list = await api.listNamespacedPod({ namespace: NAMESPACE, labelSelector: selector, limit: 1 });
    if (list.items.length === 0) return performance.now() - t0;
    if (performance.now() - t0 > limitMs) return Number.NaN;
    await new Promise((r) => setTimeout(r, 500));
  }
}

/**
 * When all N pods of a selector are Running (performance.now()). Watched, and a watch that ends (the
 * API server drops a watcher that falls behind, which 10,000 pods can do) is resumed from a fresh
 * paged list, so no pod's change is missed.
 */
async function allRunning(kc, api, selector) {
  const running = new Set();
  const see = (pod) => pod.status?.phase === 'Running' && running.add(pod.metadata.name);
  for (;;) {
    let resourceVersion;
    let cont;
    do {
      const page = await api.listNamespacedPod({ namespace: NAMESPACE, labelSelector: selector, limit: 500, _continue: cont });
      for (const pod of page.items) see(pod);
      resourceVersion = page.metadata.resourceVersion;
      cont = page.metadata._continue;
    } while (cont);
    if (running.size === N) return performance.now();
    let controller;
    const at = await new Promise((resolve) => {
      new Watch(kc)
        .watch(
          `/api/v1/namespaces/${NAMESPACE}/pods`,
          { labelSelector: selector, resourceVersion },
          (_type, pod) => see(pod) && running.size === N && resolve(performance.now()),
          () => resolve(undefined),
        )
        .then(
          (c) => (controller = c),
          () => resolve(undefined),
        );
    });
    controller?.abort();
    if (at !== undefined) return at;
  }
}

/** 1. Bare pods: the raw create rate and when all are Running. */
async function withoutBerth() {
  const kc = new KubeConfig();
  kc.loadFromFile(berthKubeconfig);
  const api = kc.makeApiClient(CoreV1Api);
  const run = `raw-${randomBytes(4).toString('hex')}`;
  const done = allRunning(kc, api, `bench-run=${run}`);
  const t0 = performance.now();
  await pool(N, CONCURRENCY, (i) =>
    api.createNamespacedPod({
      namespace: NAMESPACE,
      body: {
        metadata: { name: `${run}-${i}`, labels: { 'berth.managed': 'true', 'bench-run': run } },
        spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: IMAGE, command: ['/bin/sh', '-c', 'sleep 86400'] }] },
      },
    }),
  );
  const createMs = performance.now() - t0;
  const runningAt = await done;
  // One delete each, CONCURRENCY at once: a deletecollection of 10,000 outlasts the API server's request timeout.
  const d0 = performance.now();
  await pool(N, CONCURRENCY, (i) => api.deleteNamespacedPod({ name: `${run}-${i}`, namespace: NAMESPACE, gracePeriodSeconds: 0 }).catch(() => undefined));
  await waitEmpty(`bench-run=${run}`, 120_000);
  return { createPerS: (N / createMs) * 1000, runningMs: runningAt - t0, runningPerS: (N / (runningAt - t0)) * 1000, deleteMs: performance.now() - d0 };
}

/** A TCP relay before the API server: connections made, and the most open at once. */
async function relay(target) {
  const counts = { total: 0, open: 0, peak: 0 };
  const server = createServer((client) => {
    counts.total++;
    counts.peak = Math.max(counts.peak, ++counts.open);
    client.once('close', () => counts.open--);
    const upstream = createConnection({ host: target.hostname, port: Number(target.port) });
    client.pipe(upstream).pipe(client);
    const end = () => (client.destroy(), upstream.destroy());
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: server.address().port, counts, close: () => server.close() };
}

/** 2./3. N berth starts at once on one backend instance. */
async function withBerth(network) {
  const kc = new KubeConfig();
  kc.loadFromFile(berthKubeconfig);
  const r = await relay(new URL(kc.getCurrentCluster().server));
  kc.clusters = kc.clusters.map((c) => ({ ...c, server: `https://127.0.0.1:${r.port}` }));
  const backend = createK8sBackend({ kubeconfig: kc, namespace: NAMESPACE, ...CREATION, networkPolicy: { enforced: true } });
  globalThis.gc?.();
  const rssBefore = process.memoryUsage().rss;
  const heapBefore = process.memoryUsage().heapUsed;
  let peakRss = rssBefore;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 100);
  const t0 = performance.now();
  const settled = await Promise.allSettled(Array.from({ length: N }, () => backend.start({ image: IMAGE, network })));
  const startMs = performance.now() - t0;
  const envs = settled.filter((x) => x.status === 'fulfilled').map((x) => x.value);
  const failures = settled.filter((x) => x.status === 'rejected').map((x) => String(x.reason));
  globalThis.gc?.();
  const heapPerHandle = (process.memoryUsage().heapUsed - heapBefore) / Math.max(1, envs.length);
  const sw0 = performance.now();
  const dry = await backend.sweep({ dryRun: true, olderThanMs: 0, session: SESSION_ID });
  const sweepMs = performance.now() - sw0;
  const phases = {};
  for (const env of envs) for (const { phase, ms } of startPhases(env.startTimings)) (phases[phase] ??= []).push(ms);
  const d0 = performance.now();
  const torn = await Promise.allSettled(envs.map((env) => env.teardown()));
  const teardownMs = performance.now() - d0;
  clearInterval(sampler);
  r.close();
  return {
    started: envs.length,
    failures,
    startPerS: (envs.length / startMs) * 1000,
    startMs,
    connections: r.counts.total,
    peakConnections: r.counts.peak,
    rssPerSandbox: (peakRss - rssBefore) / Math.max(1, envs.length),
    peakRss,
    heapPerHandle,
    sweepMs,
    wouldRemove: dry.wouldRemove?.length ?? 0,
    teardownMs,
    teardownFailed: torn.filter((x) => x.status === 'rejected').length,
    phases: Object.fromEntries(Object.entries(phases).map(([phase, ms]) => [phase, phaseStats(ms)])),
  };
}

/** 4. A child runner starts N, says so, and is killed with SIGKILL; its guardian removes them. */
async function killedRunner() {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--hold'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const session = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const m = /^holding (\d+) session (\S+)$/m.exec(out);
      if (m) resolve({ count: Number(m[1]), session: m[2] });
    });
    child.on('exit', (code) => reject(new Error(`the runner exited (${code}) before it held its sandboxes`)));
  });
  child.kill('SIGKILL');
  const goneMs = await waitEmpty(`berth.managed=true,berth.session=${session.session}`, 180_000);
  return { held: session.count, goneMs };
}

if (process.argv[2] === '--hold') {
  const backend = createK8sBackend({ kubeconfig: { file: berthKubeconfig }, namespace: NAMESPACE, ...CREATION });
  const envs = await Promise.allSettled(Array.from({ length: N }, () => backend.start({ image: IMAGE, network: 'public' })));
  process.stdout.write(`holding ${envs.filter((e) => e.status === 'fulfilled').length} session ${SESSION_ID}\n`);
  await new Promise(() => undefined);
}

const printPhases = (phases) => {
  for (const [phase, st] of Object.entries(phases))
    console.log(`    ${phase.padEnd(13)} p50 ${st.p50.toFixed(0)} ms  p95 ${st.p95.toFixed(0)} ms  p99 ${st.p99.toFixed(0)} ms  (${st.count})`);
};

console.log(
  `scale bench: ${N} sandboxes on 1,000 kwok nodes; client-node ${CONCURRENCY} at once; berth ${CREATION.creation ? `${CREATION.creation.maxConcurrent} at once` : 'with its defaults'}`,
);
const raw = await withoutBerth();
console.log(
  `without berth (client-node): creates ${raw.createPerS.toFixed(0)}/s; all Running after ${s(raw.runningMs)} (${raw.runningPerS.toFixed(0)}/s); deleted one by one, ${CONCURRENCY} at once, in ${s(raw.deleteMs)}`,
);
for (const network of ['public', 'none']) {
  const b = await withBerth(network);
  console.log(
    `berth, network '${network}': ${b.started}/${N} started in ${s(b.startMs)} (${b.startPerS.toFixed(0)}/s, ${(b.startPerS / raw.runningPerS).toFixed(2)}x the Running rate without berth)`,
  );
  if (b.failures.length) console.log(`  failures (${b.failures.length}): ${b.failures.slice(0, 3).join(' | ')}`);
  console.log(
    `  API connections ${b.connections} (at most ${b.peakConnections} at once); peak RSS ${mib(b.peakRss)}, ${(b.rssPerSandbox / 1024).toFixed(1)} KiB per live sandbox; heap ${(b.heapPerHandle / 1024).toFixed(1)} KiB per handle`,
  );
  console.log(`  dry-run sweep of ${b.wouldRemove} in ${s(b.sweepMs)}; teardown of all in ${s(b.teardownMs)} (${b.teardownFailed} failed)`);
  printPhases(b.phases);
}
const killed = await killedRunner();
console.log(`a runner holding ${killed.held} killed with SIGKILL: nothing left after ${s(killed.goneMs)}`);
process.exit(0);
