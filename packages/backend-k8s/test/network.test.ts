// Network 'none' on the test cluster, for real: kube-router (test/kube/setup.sh) enforces berth's
// deny-all NetworkPolicy. Checked from inside the pods against a listener on this machine's
// address on the pods' bridge, which public pods reach.
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { CapabilityError, ConfigError, type Environment } from '@berth/core';
import { listenForTokens } from '@berth/conformance';
import { createK8sBackend, type K8sBackendOptions } from '@berth/backend-k8s';
import { NetworkingV1Api, KubeConfig } from '@kubernetes/client-node';
import { ADMIN_KUBECONFIG, BERTH_KUBECONFIG, NAMESPACE, POD_BRIDGE_ADDRESS, adminApi, TOLERATE_FAULT } from '@berth/test-support/kube-cluster';

const IMAGE = 'berth-test/busybox:latest';
const listener = await listenForTokens(POD_BRIDGE_ADDRESS);
const envs: Environment[] = [];
const servers: Server[] = [];
afterAll(async () => {
  await Promise.all(envs.map((e) => e.teardown()));
  await listener.close();
  for (const s of servers) s.close();
});

const backend = (networkPolicy: K8sBackendOptions['networkPolicy'] = { probe: { host: listener.host, port: listener.port } }) =>
  createK8sBackend({ kubeconfig: { file: BERTH_KUBECONFIG }, namespace: NAMESPACE, tolerations: TOLERATE_FAULT, networkPolicy });

/** A fresh token sent from inside the pod: true when the listener got it (nc and the listener agree). */
async function reaches(env: Environment): Promise<boolean> {
  const token = `berth-${randomBytes(6).toString('hex')}`;
  const r = await env.exec(`printf %s ${token} | nc -w 3 ${listener.host} ${listener.port}`);
  expect(r.exitCode === 0).toBe(listener.received(token));
  return listener.received(token);
}

/** Pods of this process labelled with this environment id, as the admin sees them. */
async function pods(id: string): Promise<string[]> {
  const list = await adminApi().listNamespacedPod({ namespace: NAMESPACE, labelSelector: `berth.environment=${id}` });
  return list.items.map((p) => p.metadata?.name ?? '?');
}

/** A listener on a node port (30000-32767) of the pods' bridge: kube-router lets every pod reach the node's node ports, policy or not. */
async function nodePortListener(): Promise<{ host: string; port: number }> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const port = 30000 + Math.floor(Math.random() * 2768);
    const server = createServer((socket) => socket.end());
    const ok = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(port, POD_BRIDGE_ADDRESS, () => resolve(true));
    });
    if (ok) {
      servers.push(server);
      return { host: POD_BRIDGE_ADDRESS, port };
    }
  }
  throw new Error('no free node port on the pods bridge');
}

describe('k8s network none, enforced by the cluster', () => {
  it("a listener a public pod reaches is not reached from a pod on 'none'; switching back restores it; each switch holds when setNetwork returns", async () => {
    const b = backend();
    const online = await b.start({ image: IMAGE, network: 'public' });
    envs.push(online);
    expect(await reaches(online), 'a public pod must reach the listener on the pods bridge').toBe(true);

    const started = Date.now();
    const env = await b.start({ image: IMAGE, network: 'none', networkSwitch: true });
    envs.push(env);
    const startMs = Date.now() - started;
    expect(await reaches(env)).toBe(false);
    // Ingress too: the public pod cannot reach a listener inside the 'none' pod.
    const ip = (await adminApi().readNamespacedPod({ name: env.id, namespace: NAMESPACE })).status?.podIP ?? '';
    // The listener is up when its exec has started, which a loaded node can take past any fixed wait
    // (CI once saw '' here with a 300 ms wait): the sender tries for 6 s, stopping at the first connection taken.
    const inbound = async () => {
      const inside = env.exec('timeout 9 nc -l -p 7777 >/tmp/got; true');
      await online.exec(`end=$(($(date +%s)+6)); while [ $(date +%s) -lt $end ]; do printf in | nc -w 1 ${ip} 7777 && break; sleep 1; done`);
      await inside;
      return (await env.exec('cat /tmp/got; rm -f /tmp/got')).stdout;
    };
    expect(await inbound()).toBe('');

    let t = Date.now();
    await env.setNetwork('public');
    const toPublicMs = Date.now() - t;
    expect(await reaches(env), 'switching back to public must restore the network').toBe(true);
    expect(await inbound(), 'a public pod reaches a listener in a public pod').toBe('in');
    t = Date.now();
    await env.setNetwork('none');
    const toNoneMs = Date.now() - t;
    expect(await reaches(env)).toBe(false);
    // What enforcement takes here (the README's figures come from bench/k8s-network.mjs).
    console.log(`k8s network: start on 'none' (enforcement proved) ${startMs} ms; setNetwork public ${toPublicMs} ms, none ${toNoneMs} ms`);
  }, 120_000);

  it('the deny-all policy is made once per namespace, carries berth.managed, and sweep leaves it', async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(ADMIN_KUBECONFIG);
    const policy = await kc.makeApiClient(NetworkingV1Api).readNamespacedNetworkPolicy({ name: 'berth-network-none', namespace: NAMESPACE });
    expect(policy.metadata?.labels).toMatchObject({ 'berth.managed': 'true' });
    expect(policy.spec).toMatchObject({ podSelector: { matchLabels: { 'berth.network': 'none' } }, policyTypes: ['Ingress', 'Egress'] });
    expect(policy.spec?.ingress ?? []).toEqual([]);
    expect(policy.spec?.egress ?? []).toEqual([]);
    // Another backend instance finds it there (no error), and sweep never lists it.
    const b = backend({ enforced: true, probe: { host: listener.host, port: listener.port } });
    const env = await b.start({ image: IMAGE, network: 'none' });
    envs.push(env);
    expect(await reaches(env)).toBe(false);
    // A dry run that would take everything of berth's, whoever owns it: the policy is not among it.
    const report = await b.sweep({ dryRun: true, olderThanMs: 0 });
    expect(report.wouldRemove?.length).toBeGreaterThan(0);
    expect(JSON.stringify(report)).not.toContain('berth-network-none');
  }, 60_000);

  it("where nothing enforces the policy, network 'none' is refused with a CapabilityError before any command runs, and the pod is gone", async () => {
    // kube-router lets pods reach the node's node ports whatever the policy: a real path the policy does not cover.
    const b = backend({ probe: await nodePortListener(), waitMs: 3000 });
    const env = b.environment({ image: IMAGE, network: 'none' });
    envs.push(env);
    const error = await env.start().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(CapabilityError.isInstance(error), String(error)).toBe(true);
    expect((error as CapabilityError).capability).toBe('network');
    expect((error as Error).message).toMatch(/does not enforce NetworkPolicy.*still reached/);
    await env.teardown();
    expect(await pods(env.id)).toEqual([]);
    // Known now: the next one is refused before a pod is made, and preflight says so.
    const next = b.environment({ image: IMAGE, network: 'public', networkSwitch: true });
    envs.push(next);
    const t = Date.now();
    const again = await next.start().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(CapabilityError.isInstance(again)).toBe(true);
    expect(Date.now() - t).toBeLessThan(3000);
    expect(await pods(next.id)).toEqual([]);
    const report = await b.preflight({ image: IMAGE, network: 'none' });
    expect(report.checks.find((c) => c.name === 'network-policy')).toMatchObject({ status: 'fail' });
  }, 90_000);

  it("options.networkPolicy.enforced false refuses 'none' and switching at environment(), by name", () => {
    const b = backend({ enforced: false });
    expect(b.capabilities.networkModes).toEqual(['public']);
    for (const spec of [
      { image: IMAGE, network: 'none' as const },
      { image: IMAGE, network: 'public' as const, networkSwitch: true },
    ]) {
      let error: unknown;
      try {
        b.environment(spec);
      } catch (e) {
        error = e;
      }
      expect(CapabilityError.isInstance(error)).toBe(true);
      expect((error as Error).message).toMatch(/networkPolicy\.enforced is false/);
    }
  });

  it("preflight proves enforcement with a pod of the spec's image, and says so", async () => {
    const report = await backend().preflight({ image: IMAGE, network: 'none' });
    const check = report.checks.find((c) => c.name === 'network-policy');
    expect(check, JSON.stringify(report.checks)).toMatchObject({ status: 'ok' });
    expect(check?.message).toMatch(/enforces NetworkPolicy/);
    expect(report.ok).toBe(true);
  }, 60_000);

  // The proof is made once per backend instance and waited on by every pod that needs it. A pod
  // must never get a verdict its neighbours did not: N no-network pods started at once on a fresh
  // backend are all enforced, or all refused.
  it("N no-network pods at once with the default probe (the API server's service): every one proved cut off, none reaching the listener", async () => {
    const b = createK8sBackend({ kubeconfig: { file: BERTH_KUBECONFIG }, namespace: NAMESPACE, tolerations: TOLERATE_FAULT });
    const started = await Promise.allSettled(Array.from({ length: 4 }, () => b.start({ image: IMAGE, network: 'none' })));
    for (const r of started) if (r.status === 'fulfilled') envs.push(r.value);
    expect(
      started.map((r) => r.status),
      started.map((r) => (r.status === 'rejected' ? String(r.reason) : 'ok')).join('\n'),
    ).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'fulfilled']);
    for (const r of started) expect(await reaches((r as PromiseFulfilledResult<Environment>).value)).toBe(false);
  }, 180_000);

  it('N no-network pods at once where the probe address is unreachable even from a public pod: every one refused the same way, none started', async () => {
    // A port of this machine on the pods' bridge where nothing listens: no pod reaches it, so
    // enforcement cannot be proved; a pod that only checked it is cut off would have "passed".
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, POD_BRIDGE_ADDRESS, resolve));
    const port = (closed.address() as { port: number }).port;
    await new Promise((resolve) => closed.close(resolve));
    const b = backend({ probe: { host: POD_BRIDGE_ADDRESS, port }, waitMs: 3000 });
    const made = Array.from({ length: 3 }, () => b.environment({ image: IMAGE, network: 'none' }));
    envs.push(...made);
    const outcomes = await Promise.allSettled(made.map((e) => e.start()));
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected', 'rejected']);
    for (const [i, o] of outcomes.entries()) {
      const error = (o as PromiseRejectedResult).reason as ConfigError;
      expect(ConfigError.isInstance(error), String(error)).toBe(true);
      expect(error.path).toBe('options.networkPolicy.probe');
      expect(error.message).toMatch(/a public pod cannot reach/);
      expect(error.environmentId).toBe(made[i]!.id);
    }
  }, 120_000);
});
