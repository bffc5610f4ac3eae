#!/usr/bin/env node
// Sandboxes per second on the test cluster (bash test/setup/setup.sh first), 200 pods through in
// each mode, measured in the same run:
//   - without berth: a burst of 100 bare pods created by client-node as fast as the concurrency
//     allows (creates/s: the API server's rate) until all are Running (the node's rate; the node
//     holds 110 pods), then 200 through, each created, Running and deleted (the sustained rate);
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
/** The burst stays under the node's limit of 110 pods (the kubelet's default maxPods). */
const BURST = Math.min(PODS, 100);

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

/** A bare pod of the bench, as client-node makes it (no berth). */
const barePod = (name) => ({
  metadata: { name, labels: { 'berth.bench': RUN } },
  spec: {
    tolerations: TOLERATIONS,
    terminationGracePeriodSeconds: 0,
    automountServiceAccountToken: false,
    containers: [{ name: 'c', image: IMAGE, imagePullPolicy: 'Never', command: ['sleep', '3600'] }],
  },
});

async function untilGone() {
  for (;;) {
    const list = await api.listNamespacedPod({ namespace: NAMESPACE, labelSelector: `berth.bench=${RUN}` });
    if (list.items.length === 0) return;
    await new Promise((r) => setTimeout(r, 500));
  }
}

/**
 * The API server and the node without berth. A burst of BURST pods (under the node's 110-pod
 * limit) created as fast as CONCURRENCY allows: creates/s is the API server's rate, all Running/s
 * the node's. Then PODS pods through, CONCURRENCY at a time, each created, polled until Running
 * and deleted: the sustained rate berth's cold start is compared with.
 */
async function apiServerAlone() {
  const burst = Array.from({ length: BURST }, (_, i) => `berth-bench-${RUN}-b${i}`);
  const t0 = performance.now();
  await pool(BURST, CONCURRENCY, (i) => api.createNamespacedPod({ namespace: NAMESPACE, body: barePod(burst[i]) }));
  const created = performance.now() - t0;
  for (;;) {
    const list = await api.listNamespacedPod({ namespace: NAMESPACE, labelSelector: `berth.bench=${RUN}` });
    if (list.items.filter((p) => p.status?.phase === 'Running').length >= BURST) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  const running = performance.now() - t0;
  await pool(BURST, CONCURRENCY, (i) => api.deleteNamespacedPod({ name: burst[i], namespace: NAMESPACE, gracePeriodSeconds: 0 }).catch(() => undefined));
  await untilGone();

  const t1 = performance.now();
  await pool(PODS, CONCURRENCY, async (i) => {
    const name = `berth-bench-${RUN}-s${i}`;
    await api.createNamespacedPod({ namespace: NAMESPACE, body: barePod(name) });
    while ((await api.readNamespacedPod({ name, namespace: NAMESPACE })).status?.phase !== 'Running') await new Promise((r) => setTimeout(r, 250));
    await api.deleteNamespacedPod({ name, namespace: NAMESPACE, gracePeriodSeconds: 0 });
  });
  const sustained = performance.now() - t1;
  await untilGone();
  return { created, running, sustained };
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
// berth's creation limits set to the same concurrency as client-node's (its default is 16 at once, 20/s).
const backend = createK8sBackend({
  kubeconfig: { file: KUBECONFIG },
  namespace: NAMESPACE,
  tolerations: TOLERATIONS,
  creation: { maxConcurrent: CONCURRENCY, perSecond: 100 },
});
const alone = await apiServerAlone();
console.log(
  `  without berth, a burst of ${BURST}: ${perSecond(BURST, alone.created)} creates/s (the API server); all Running after ${(alone.running / 1000).toFixed(1)} s: ${perSecond(BURST, alone.running)} pods/s (the node)`,
);
console.log(`  without berth, ${PODS} through (create, Running, delete): ${perSecond(PODS, alone.sustained)} pods/s`);
const cold = await berthCold(backend);
console.log(
  `  berth cold (start + first exec + teardown): ${perSecond(PODS, cold)} sandboxes/s, ${(alone.sustained / cold).toFixed(2)}x the rate without berth`,
);
const pooled = await berthPooled(backend);
console.log(
  `  berth pooled (claim + first exec + teardown, pool of ${CONCURRENCY}): ${perSecond(PODS, pooled)} sandboxes/s, ${(alone.sustained / pooled).toFixed(2)}x the rate without berth`,
);
