// 2,000 sandboxes from one backend instance on the scale test bed: a second control plane whose
// 1,000 nodes are kwok's fakes (test/kube/scale). Pods there run nothing, so this measures berth's
// own side at scale: every start succeeds, a start costs a constant number of API requests, the
// connections stay a small constant, a live handle costs little heap, a dry-run sweep is quick, and
// nothing is left. Network 'none' here is declared enforced (kwok cannot run a probe: its exec
// answers 500 for a non-zero exit), so the per-node proof is proved on the real test cluster
// instead (network.test.ts, keep-alive.test.ts).
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { SESSION_ID, type Environment } from '@berth/core';
import { createK8sBackend } from '@berth/backend-k8s';
import { countingRelay, type CountingRelay } from '@berth/test-support/counting-relay';
import { kwokCluster } from '@berth/test-support/kwok-cluster';

const SANDBOXES = Number(process.env.BERTH_SCALE_SANDBOXES ?? 2000);
/** Every fourth on network 'none'. */
const NONE_EVERY = 4;

const relays: CountingRelay[] = [];
afterAll(() => {
  for (const r of relays) r.close();
});

describe('k8s at scale on 1,000 fake nodes (kwok)', () => {
  it(`${SANDBOXES} sandboxes at once: all start, constant requests and connections, little heap per handle, quick sweep, nothing left`, {
    timeout: 600_000,
  }, async () => {
    const bed = await kwokCluster();
    const kc = new KubeConfig();
    kc.loadFromFile(bed.berthKubeconfig);
    const api = new URL(kc.getCurrentCluster()!.server);
    const relay = await countingRelay({ host: api.hostname, port: Number(api.port) });
    relays.push(relay);
    kc.clusters = kc.clusters.map((c) => ({ ...c, server: `https://127.0.0.1:${relay.port}` }));
    // Every API request asks the kubeconfig for its credentials once (watches through applyToFetchOptions).
    let requests = 0;
    const authenticate = kc.applySecurityAuthentication.bind(kc);
    kc.applySecurityAuthentication = (context) => {
      requests++;
      return authenticate(context);
    };
    const watch = kc.applyToFetchOptions.bind(kc);
    kc.applyToFetchOptions = (opts) => {
      requests++;
      return watch(opts);
    };
    const backend = createK8sBackend({
      kubeconfig: kc,
      namespace: bed.namespace,
      networkPolicy: { enforced: true },
    });

    global.gc?.();
    const heapBefore = process.memoryUsage().heapUsed;
    const rssBefore = process.memoryUsage().rss;
    let peakRss = rssBefore;
    const sampler = setInterval(() => {
      peakRss = Math.max(peakRss, process.memoryUsage().rss);
    }, 100);
    const t0 = Date.now();
    const settled = await Promise.allSettled(
      Array.from({ length: SANDBOXES }, (_, i) => backend.start({ image: 'berth-test/busybox:latest', network: i % NONE_EVERY === 0 ? 'none' : 'public' })),
    );
    const startMs = Date.now() - t0;
    clearInterval(sampler);
    const rssPerSandbox = (peakRss - rssBefore) / SANDBOXES;
    const envs = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const failed = settled.flatMap((s) => (s.status === 'rejected' ? [String(s.reason)] : []));
    global.gc?.();
    const heapPerHandle = (process.memoryUsage().heapUsed - heapBefore) / Math.max(1, envs.length);
    const startRequests = requests;

    const s0 = Date.now();
    const dry = await backend.sweep({ dryRun: true, olderThanMs: 0, session: SESSION_ID });
    const sweepMs = Date.now() - s0;

    const d0 = Date.now();
    const removed = await Promise.allSettled(envs.map((env: Environment) => env.teardown()));
    const teardownMs = Date.now() - d0;

    const admin = new KubeConfig();
    admin.loadFromFile(bed.adminKubeconfig);
    const left = await admin
      .makeApiClient(CoreV1Api)
      .listNamespacedPod({ namespace: bed.namespace, labelSelector: `berth.managed=true,berth.session=${SESSION_ID}` });
    console.log(
      `kwok scale: ${envs.length}/${SANDBOXES} started in ${startMs} ms (${Math.round((SANDBOXES / startMs) * 1000)}/s); ` +
        `${(startRequests / SANDBOXES).toFixed(2)} API requests per start, ${(requests / SANDBOXES).toFixed(2)} with teardown and sweep; ` +
        `connections ${relay.connections()} (peak ${relay.peak()}); heap ${(heapPerHandle / 1024).toFixed(1)} KiB per handle, peak RSS ${(rssPerSandbox / 1024).toFixed(1)} KiB per sandbox; ` +
        `dry-run sweep ${sweepMs} ms; teardown ${teardownMs} ms`,
    );
    expect(failed.slice(0, 3)).toEqual([]);
    expect(envs).toHaveLength(SANDBOXES);
    // A create per start, a watch for all and a policy read once: one per start measured, a few to spare.
    expect(startRequests / SANDBOXES).toBeLessThan(1.1);
    // Plus a delete per teardown and the sweep's pages.
    expect(requests / SANDBOXES).toBeLessThan(2.2);
    expect(relay.peak()).toBeLessThanOrEqual(16);
    // Measured after a collection (vitest runs with --expose-gc): 5 KiB here; the bench reports RSS.
    expect(heapPerHandle).toBeLessThan(16 * 1024);
    expect(dry.wouldRemove).toHaveLength(SANDBOXES);
    expect(sweepMs).toBeLessThan(10_000);
    expect(removed.filter((r) => r.status === 'rejected')).toEqual([]);
    expect(left.items.map((p) => p.metadata?.name)).toEqual([]);
  });
});
