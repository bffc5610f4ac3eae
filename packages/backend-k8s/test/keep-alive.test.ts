// API calls on kept-alive connections, counted for real: a TCP relay in front of the test cluster's
// API server counts the connections (TLS passes through it untouched, so the client checks the
// server's certificate as usual).
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { createK8sBackend } from '@berth/backend-k8s';
import { keepConnectionsAlive } from '../src/keep-alive-agent.js';
import { BERTH_KUBECONFIG, NAMESPACE } from '@berth/test-support/kube-cluster';
import { countingRelay, type CountingRelay } from '@berth/test-support/counting-relay';

const relays: CountingRelay[] = [];
afterAll(() => {
  for (const r of relays) r.close();
});

/** A relay to the test cluster's API server, closed after the file. */
async function countingRelayToApi(): Promise<CountingRelay> {
  const relay = await countingRelay({ host: '127.0.0.1', port: 6443 });
  relays.push(relay);
  return relay;
}

/** The berth kubeconfig, its server moved to the relay (127.0.0.1 is in the API server's certificate). */
function kubeconfigVia(port: number): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(BERTH_KUBECONFIG);
  const cluster = kc.getCurrentCluster()!;
  kc.clusters = kc.clusters.map((c) => (c.name === cluster.name ? { ...c, server: `https://127.0.0.1:${port}` } : c));
  return kc;
}

describe('k8s API calls on kept-alive connections', () => {
  it('ten sequential calls take one connection (client-node alone takes ten)', async () => {
    const plain = await countingRelayToApi();
    const api = kubeconfigVia(plain.port).makeApiClient(CoreV1Api);
    for (let i = 0; i < 10; i++) await api.listNamespacedPod({ namespace: NAMESPACE, limit: 1 });
    expect(plain.connections(), 'client-node 1.4 without the fix: one connection per call').toBe(10);

    const kept = await countingRelayToApi();
    const kc = kubeconfigVia(kept.port);
    const close = keepConnectionsAlive(kc);
    const keptApi = kc.makeApiClient(CoreV1Api);
    for (let i = 0; i < 10; i++) await keptApi.listNamespacedPod({ namespace: NAMESPACE, limit: 1 });
    expect(kept.connections()).toBe(1);
    close();
  });

  it("the backend's own calls share connections: a start, commands and a teardown open few besides the exec sockets", async () => {
    const relay = await countingRelayToApi();
    const backend = createK8sBackend({
      kubeconfig: kubeconfigVia(relay.port),
      namespace: NAMESPACE,
      tolerations: [{ key: 'berth.test/fault', operator: 'Exists', effect: 'NoSchedule' }],
    });
    const env = await backend.start({ image: 'berth-test/busybox:latest', network: 'public' });
    const beforeExecs = relay.connections();
    for (let i = 0; i < 5; i++) expect((await env.exec(['true'])).exitCode).toBe(0);
    // Each exec is its own WebSocket; nothing else needs a new connection.
    expect(relay.connections() - beforeExecs).toBeLessThanOrEqual(5);
    await env.teardown();
    // The start's API calls (create, watch, reads) came on a handful of connections, not one each.
    expect(beforeExecs).toBeLessThanOrEqual(4);
  }, 60_000);

  it('24 starts and teardowns at once share one pod watch: the connections stay a small constant, not one per start', async () => {
    const relay = await countingRelayToApi();
    const backend = createK8sBackend({
      kubeconfig: kubeconfigVia(relay.port),
      namespace: NAMESPACE,
      tolerations: [{ key: 'berth.test/fault', operator: 'Exists', effect: 'NoSchedule' }],
      creation: { maxConcurrent: 24 },
    });
    const envs = await Promise.all(Array.from({ length: 24 }, () => backend.start({ image: 'berth-test/busybox:latest', network: 'public' })));
    await Promise.all(envs.map((env) => env.teardown()));
    // One watch per start (and one per teardown's wait for the pod to go) took 48 connections or more.
    expect(relay.connections()).toBeLessThanOrEqual(16);
    expect(relay.peak()).toBeLessThanOrEqual(16);
  }, 120_000);

  it("starts on network 'none' cost no connection more than starts on 'public' once the node is proved: no exec per pod", async () => {
    const relay = await countingRelayToApi();
    const backend = createK8sBackend({
      kubeconfig: kubeconfigVia(relay.port),
      namespace: NAMESPACE,
      tolerations: [{ key: 'berth.test/fault', operator: 'Exists', effect: 'NoSchedule' }],
      creation: { maxConcurrent: 8 },
    });
    // The node's proof (two execs, two label patches) and the policy's creation, once.
    const first = await backend.start({ image: 'berth-test/busybox:latest', network: 'none' });
    const batch = async (network: 'public' | 'none') => {
      const before = relay.connections();
      const envs = await Promise.all(Array.from({ length: 8 }, () => backend.start({ image: 'berth-test/busybox:latest', network })));
      const opened = relay.connections() - before;
      await Promise.all(envs.map((env) => env.teardown()));
      return opened;
    };
    const pub = await batch('public');
    const none = await batch('none');
    await first.teardown();
    // One exec per 'none' pod (its own WebSocket) made this 8 or more.
    expect(none).toBeLessThanOrEqual(pub + 2);
  }, 120_000);
});
