#!/usr/bin/env node
// Sandboxes per second on the test cluster (bash test/setup/setup.sh first), 200 pods through in
// each mode, measured in the same run:
//   - the API server alone: 200 bare pods created by client-node as fast as the concurrency allows
//     (creates/s: the API server's rate), then until all are Running (Running/s: the node's rate);
//   - berth cold: 200 backend.start() (create, Running, a first exec) + teardown, same concurrency;
//   - berth pooled: 200 claims (claim + a first exec + teardown) from a warm pool as large as the
//     concurrency, refilled behind the claims.
// Run: npm run build && node bench/k8s-rate.mjs   (BENCH_RATE_PODS=200, BENCH_RATE_CONCURRENCY=32)
import { randomBytes } from 'node:crypto';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { createK8sBackend } from '@berth/backend-k8s';

const PODS = Number(process.env.BENCH_RATE_PODS ?? 200);
const CONCURRENCY = Number(process.env.BENCH_RATE_CONCURRENCY ?? 32);
const STATE = process.env.BERTH_KUBE_STATE ?? '/var/lib/berth-kube';
const KUBECONFIG = `${STATE}/berth.kubeconfig`;
const NAMESPACE = 'berth-test';
const IMAGE = 'berth-test/busybox:latest';
const TOLERATIONS = [{ key: 'berth.test/fault', operator: 'Exists', effect: 'NoSchedule' }];
const RUN = `rate-${randomBytes(4).toString('hex')}`;

const kc = new KubeConfig();
kc.loadFromFile(KUBECONFIG);
const api = kc.makeApiClient(CoreV1Api);

/** Runs `work(i)` for i < n, `limit` at a time. */
async function pool(n, limit, work) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, n) }, async () => {
      while (next < n) await work(next++);
    }),
  );
}
const perSecond = (n, ms) => (n / (ms / 1000)).toFixed(2);

async function apiServerAlone() {
  const names = Array.from({ length: PODS }, (_, i) => `berth-bench-${RUN}-${i}`);
  const t0 = performance.now();
  await pool(PODS, CONCURRENCY, (i) =>
    api.createNamespacedPod({
      namespace: NAMESPACE,
      body: {
        metadata: { name: names[i], labels: { 'berth.bench': RUN } },
        spec: {
          tolerations: TOLERATIONS,
          terminationGracePeriodSeconds: 0,
          automountServiceAccountToken: false,
          containers: [{ name: 'c', image: IMAGE, imagePullPolicy: 'Never', command: ['sleep', '3600'] }],
        },
      },
    }),
  );
  const created = performance.now() - t0;
  for (;;) {
    const list = await api.listNamespacedPod({ namespace: NAMESPACE, labelSelector: `berth.bench=${RUN}` });
    if (list.items.filter((p) => p.status?.phase === 'Running').length >= PODS) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  const running = performance.now() - t0;
  await pool(PODS, CONCURRENCY, (i) => api.deleteNamespacedPod({ name: names[i], namespace: NAMESPACE, gracePeriodSeconds: 0 }).catch(() => undefined));
  // Wait for the deletions, so the next mode starts on an empty node.
  for (;;) {
    const list = await api.listNamespacedPod({ namespace: NAMESPACE, labelSelector: `berth.bench=${RUN}` });
    if (list.items.length === 0) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  return { created, running };
}

async function berthCold(backend) {
  const t0 = performance.now();
  await pool(PODS, CONCURRENCY, async () => {
    const env = await backend.start({ image: IMAGE, network: 'public' });
    await env.exec(['true']);
    await env.teardown();
  });
  return performance.now() - t0;
}

async function berthPooled(backend) {
  const warm = backend.pool({ image: IMAGE, network: 'public' }, { size: CONCURRENCY });
  try {
    await warm.fill();
    const t0 = performance.now();
    await pool(PODS, CONCURRENCY, async () => {
      const env = await warm.claim();
      await env.exec(['true']);
      await env.teardown();
    });
    return performance.now() - t0;
  } finally {
    await warm.close();
  }
}

console.log(`berth k8s rate bench: ${PODS} pods per mode, ${CONCURRENCY} at once, namespace ${NAMESPACE}`);
const backend = createK8sBackend({ kubeconfig: { file: KUBECONFIG }, namespace: NAMESPACE, tolerations: TOLERATIONS });
const alone = await apiServerAlone();
console.log(
  `  API server alone: ${perSecond(PODS, alone.created)} creates/s; all Running after ${(alone.running / 1000).toFixed(1)} s: ${perSecond(PODS, alone.running)} pods/s`,
);
const cold = await berthCold(backend);
console.log(
  `  berth cold (start + first exec + teardown): ${perSecond(PODS, cold)} sandboxes/s, ${(Number(perSecond(PODS, cold)) / Number(perSecond(PODS, alone.running))).toFixed(2)}x the node's Running rate`,
);
const pooled = await berthPooled(backend);
console.log(`  berth pooled (claim + first exec + teardown, pool of ${CONCURRENCY}): ${perSecond(PODS, pooled)} sandboxes/s`);
