// Measures the scale bed by hand (not a test): COUNT pods made at CONCURRENCY as berth's service
// account, how fast they reach Running (a watch sees each), then deleted the same way until the
// watch has seen every one go; with the control plane's CPU seconds and memory over the run.
//   node test/kube/scale/pod-bench.mjs [count=500] [concurrency=50]
import { readFileSync } from 'node:fs';
import { CoreV1Api, KubeConfig, Watch } from '@kubernetes/client-node';

const STATE = process.env.BERTH_KUBE_SCALE_STATE ?? '/var/lib/berth-kube-scale';
const NAMESPACE = 'berth-scale';
const count = Number(process.argv[2] ?? 500);
const concurrency = Number(process.argv[3] ?? 50);
const run = `b${Date.now().toString(36)}`;
const LIMIT_MS = 600_000;

const kc = new KubeConfig();
kc.loadFromFile(`${STATE}/berth.kubeconfig`);
const api = kc.makeApiClient(CoreV1Api);

// CPU seconds (user + system) and resident memory of each process setup.sh started.
const TICKS = 100;
function processes() {
  const out = {};
  for (const name of ['etcd', 'apiserver', 'scheduler', 'kwok']) {
    const pid = readFileSync(`${STATE}/${name}.pid`, 'utf8').trim();
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
    out[name] = { cpu: (Number(fields[11]) + Number(fields[12])) / TICKS, rssMiB: rss / 1024 };
  }
  return out;
}

async function pool(items, work) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) await work(items[next++]);
    }),
  );
}

function until(what, check) {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const timer = setInterval(() => {
      if (check()) return (clearInterval(timer), resolve());
      if (Date.now() - started > LIMIT_MS) clearInterval(timer), reject(new Error(`${what}: not within ${LIMIT_MS / 1000} s`));
    }, 20);
  });
}

const names = Array.from({ length: count }, (_, i) => `${run}-${i}`);
const created = new Map();
const running = new Map();
const gone = new Map();
// The watch, begun again from a fresh list if the server ends it (a missed event would hang the run).
let watch;
let stopped = false;
async function observe() {
  const list = await api.listNamespacedPod({ namespace: NAMESPACE, labelSelector: `berth.bench=${run}` });
  const now = performance.now();
  const present = new Set();
  for (const pod of list.items) {
    present.add(pod.metadata.name);
    if (pod.status?.phase === 'Running' && !running.has(pod.metadata.name)) running.set(pod.metadata.name, now);
  }
  for (const name of created.keys()) if (!present.has(name) && !gone.has(name)) gone.set(name, now);
  watch = await new Watch(kc).watch(
    `/api/v1/namespaces/${NAMESPACE}/pods`,
    { labelSelector: `berth.bench=${run}`, resourceVersion: list.metadata.resourceVersion },
    (type, pod) => {
      const name = pod.metadata.name;
      if (type === 'DELETED') gone.set(name, performance.now());
      else if (pod.status?.phase === 'Running' && !running.has(name)) running.set(name, performance.now());
    },
    (error) => {
      if (stopped) return;
      console.error('watch ended, watching again:', error ?? 'closed by the server');
      observe().catch((e) => console.error('could not watch again:', e));
    },
  );
}
await observe();

const peak = {};
const sampler = setInterval(() => {
  for (const [name, p] of Object.entries(processes())) peak[name] = Math.max(peak[name] ?? 0, p.rssMiB);
}, 500);
const progress = setInterval(() => console.error(`created ${created.size}, Running ${running.size}, gone ${gone.size}`), 5000);
const before = processes();
const t0 = performance.now();
await pool(names, async (name) => {
  const body = {
    metadata: { name, labels: { 'berth.managed': 'true', 'berth.bench': run } },
    spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: '127.0.0.1:5000/berth/bench:latest', command: ['sleep', 'infinity'] }] },
  };
  const sent = performance.now();
  await api.createNamespacedPod({ namespace: NAMESPACE, body });
  created.set(name, sent);
});
const tCreated = performance.now();
await until(`${count} pods Running`, () => running.size === count);
const tRunning = performance.now();
await pool(names, (name) => api.deleteNamespacedPod({ name, namespace: NAMESPACE }));
const tDeleteSent = performance.now();
await until(`${count} pods gone`, () => gone.size === count);
const tGone = performance.now();
const after = processes();
clearInterval(sampler);
clearInterval(progress);
stopped = true;
watch.abort();

const s = (ms) => (ms / 1000).toFixed(2);
const latencies = names.map((n) => running.get(n) - created.get(n)).sort((a, b) => a - b);
const pct = (p) => s(latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))]);
console.log(`${count} pods, concurrency ${concurrency}, as berth's service account`);
console.log(`create: ${s(tCreated - t0)} s (${(count / ((tCreated - t0) / 1000)).toFixed(0)} creates/s)`);
console.log(
  `all Running: ${s(tRunning - t0)} s after the first create (${(count / ((tRunning - t0) / 1000)).toFixed(0)} Running/s); create->Running p50 ${pct(50)} s, p95 ${pct(95)} s, max ${pct(100)} s`,
);
console.log(
  `delete: requests ${s(tDeleteSent - tRunning)} s, all gone ${s(tGone - tRunning)} s (${(count / ((tGone - tRunning) / 1000)).toFixed(0)} deletes/s)`,
);
for (const name of Object.keys(before)) {
  const cpu = after[name].cpu - before[name].cpu;
  console.log(`${name}: ${cpu.toFixed(1)} CPU s over ${s(tGone - t0)} s, RSS ${before[name].rssMiB.toFixed(0)} -> peak ${peak[name].toFixed(0)} MiB`);
}
