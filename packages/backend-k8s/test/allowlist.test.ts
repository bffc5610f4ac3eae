// network: { allow } on the test cluster, for real: each pod's own NetworkPolicy of IP blocks,
// enforced by kube-router, checked from inside the pods against two listeners on this machine's
// two addresses public pods reach (both on the pods' bridge): the allowed one reached, the
// other not, in the same pod (the positive control is the allowed one, and a public pod first
// reaches both). Names are resolved by berth (options.resolveHost here: the test
// cluster has no DNS).
import { NetworkingV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { CapabilityError, ConfigError, type Environment, type NetworkNotice } from '@berth/core';
import { listenForTokens, reaches, startDnsResponder } from '@berth/conformance';
import { createK8sBackend } from '@berth/backend-k8s';
import {
  ADMIN_KUBECONFIG,
  BERTH_KUBECONFIG,
  NAMESPACE,
  POD_BRIDGE_SECOND_ADDRESS,
  POD_BRIDGE_ADDRESS,
  TOLERATE_FAULT,
  adminApi,
} from '@berth/test-support/kube-cluster';

const IMAGE = 'berth-test/busybox:latest';
const bridge = await listenForTokens(POD_BRIDGE_ADDRESS);
const second = await listenForTokens(POD_BRIDGE_SECOND_ADDRESS);
const envs: Environment[] = [];
afterAll(async () => {
  await Promise.all(envs.map((e) => e.teardown()));
  await bridge.close();
  await second.close();
});

const resolved: string[] = [];
const backend = createK8sBackend({
  kubeconfig: { file: BERTH_KUBECONFIG },
  namespace: NAMESPACE,
  tolerations: TOLERATE_FAULT,
  networkPolicy: { probe: { host: bridge.host, port: bridge.port } },
  resolveHost: async (name) => {
    resolved.push(name);
    if (name === 'bridge.berth.test') return [POD_BRIDGE_ADDRESS];
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
  },
});

async function start(spec: Parameters<typeof backend.start>[0]): Promise<Environment> {
  const env = await backend.start(spec);
  envs.push(env);
  return env;
}

async function policies(): Promise<string[]> {
  const kc = new KubeConfig();
  kc.loadFromFile(ADMIN_KUBECONFIG);
  const list = await kc.makeApiClient(NetworkingV1Api).listNamespacedNetworkPolicy({ namespace: NAMESPACE });
  return list.items.map((p) => p.metadata?.name ?? '?');
}

describe('k8s network allowlist, enforced by the cluster', () => {
  it('an allowed address is reached and another address is not, from the same pod; teardown removes its policy', async () => {
    const open = await start({ image: IMAGE, network: 'public' });
    expect(await reaches(open, bridge), 'a public pod must reach the bridge listener').toBe(true);
    expect(await reaches(open, second), 'a public pod must reach the second listener').toBe(true);

    const env = await start({ image: IMAGE, network: { allow: [POD_BRIDGE_ADDRESS] } });
    expect(env.network).toEqual({ allow: [POD_BRIDGE_ADDRESS] });
    expect(env.networkEnforcement.allowlist).toMatchObject({ addresses: 'packet', names: 'resolved', wildcards: false });
    expect(await reaches(env, bridge), 'the allowed address was not reached').toBe(true);
    expect(await reaches(env, second), 'an address the allowlist does not list was reached').toBe(false);
    expect(await policies()).toContain(`${env.id}-egress`);
    await env.teardown();
    expect(await policies()).not.toContain(`${env.id}-egress`);
  });

  it('a range and a resolved name allow what they cover; switching none -> allowlist -> public -> none holds at each step', async () => {
    const env = await start({ image: IMAGE, network: 'none', networkSwitch: true });
    expect(await reaches(env, bridge)).toBe(false);
    await env.setNetwork({ allow: ['10.244.0.252/30'] });
    expect(await reaches(env, second), 'the range 10.244.0.252/30 covers the second address').toBe(true);
    expect(await reaches(env, bridge)).toBe(false);
    await env.setNetwork({ allow: ['bridge.berth.test'] });
    expect(resolved).toContain('bridge.berth.test');
    expect(await reaches(env, bridge), "the name's resolved address was not reached").toBe(true);
    expect(await reaches(env, { ...bridge, host: 'bridge.berth.test' }), 'the name did not resolve inside the pod (its /etc/hosts)').toBe(true);
    expect(await reaches(env, second), 'the previous allowlist still held after a new one').toBe(false);
    const hostsLines = async () => (await env.exec(['grep', '-c', 'berth-allowlist', '/etc/hosts'])).stdout.trim();
    expect(await hostsLines()).toBe('1');
    await env.setNetwork('public');
    expect(await reaches(env, second)).toBe(true);
    expect(await hostsLines(), "berth's hosts lines outlived the allowlist").toBe('0');
    await env.setNetwork('none');
    expect(await reaches(env, bridge)).toBe(false);
    expect(await reaches(env, second)).toBe(false);
  });

  it('a name whose address changes while the pod lives is followed (options.refreshNamesMs): its policy and /etc/hosts move to the new address', async () => {
    let moving = POD_BRIDGE_ADDRESS;
    const refreshing = createK8sBackend({
      kubeconfig: { file: BERTH_KUBECONFIG },
      namespace: NAMESPACE,
      tolerations: TOLERATE_FAULT,
      networkPolicy: { probe: { host: bridge.host, port: bridge.port } },
      refreshNamesMs: 500,
      resolveHost: async () => [moving],
    });
    const env = await refreshing.start({ image: IMAGE, network: { allow: ['moving.berth.test'] } });
    envs.push(env);
    const notices: NetworkNotice[] = [];
    env.events.on('network', (n) => notices.push(n));
    expect(await reaches(env, { ...bridge, host: 'moving.berth.test' }), 'the name resolves to its first address, which is reached').toBe(true);
    expect(await reaches(env, second)).toBe(false);

    moving = POD_BRIDGE_SECOND_ADDRESS;
    for (let i = 0; i < 300 && notices.length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(notices[0]).toEqual({ kind: 'refreshed', hosts: [{ name: 'moving.berth.test', addresses: [POD_BRIDGE_SECOND_ADDRESS] }] });
    expect(await reaches(env, { ...second, host: 'moving.berth.test' }), 'the name now resolves to its new address, which is reached').toBe(true);
    expect(await reaches(env, bridge), 'the old address is still allowed after the name moved').toBe(false);
  });

  it('a wildcard is refused by name before any pod is made; a name that does not resolve is a ConfigError naming it', async () => {
    const before = (await adminApi().listNamespacedPod({ namespace: NAMESPACE })).items.length;
    const wildcard = await backend.start({ image: IMAGE, network: { allow: ['*.berth.test'] } }).catch((e: unknown) => e);
    expect(CapabilityError.isInstance(wildcard), String(wildcard)).toBe(true);
    expect((wildcard as Error).message).toMatch(/cannot enforce wildcard entries \(\*\.berth\.test\): it resolves names to addresses/);
    expect((await adminApi().listNamespacedPod({ namespace: NAMESPACE })).items.length).toBe(before);

    const unknown = await backend.start({ image: IMAGE, network: { allow: ['nowhere.berth.test'] } }).catch((e: unknown) => e);
    expect(unknown).toMatchObject({ name: 'ConfigError', path: 'spec.network.allow' });
    expect((unknown as Error).message).toMatch(/"nowhere\.berth\.test" has no IPv4 address/);
  });
});

describe("k8s options.egressProxy: names matched by berth's egress proxy pod", () => {
  const proxyPods = async () =>
    (await adminApi().listNamespacedPod({ namespace: NAMESPACE, labelSelector: 'berth.egress-proxy=true' })).items.filter(
      (p) => !p.metadata?.deletionTimestamp,
    );

  it("public -> names -> public: the pod's resolver is the proxy pod while its allowlist holds, the kubelet's again after; the proxy pod lives while a sandbox needs it, one for two sandboxes, and is deleted with the last", async () => {
    const names = await startDnsResponder(POD_BRIDGE_ADDRESS, 0, 'test');
    const proxied = createK8sBackend({
      kubeconfig: { file: BERTH_KUBECONFIG },
      namespace: NAMESPACE,
      tolerations: TOLERATE_FAULT,
      networkPolicy: { probe: { host: bridge.host, port: bridge.port } },
      egressProxy: { image: 'berth-test/node:20', nameservers: [`${POD_BRIDGE_ADDRESS}:${names.port}`] },
    });
    try {
      expect(await proxyPods()).toEqual([]);
      const env = await proxied.start({ image: IMAGE, network: 'public', networkSwitch: true });
      envs.push(env);
      const kubelet = (await env.exec(['cat', '/etc/resolv.conf'])).stdout;
      expect(await proxyPods(), 'a proxy pod before any allowlist with names').toEqual([]);
      await env.setNetwork({ allow: ['*.berth.test'] });
      const [pod, ...more] = await proxyPods();
      expect(more).toEqual([]);
      expect(pod?.metadata?.labels).toMatchObject({ 'berth.managed': 'true' });
      expect((await env.exec(['cat', '/etc/resolv.conf'])).stdout).toBe(`nameserver ${pod?.status?.podIP}\n`);
      const lookup = await env.exec(['nslookup', '-type=a', 'a.berth.test']);
      expect(lookup.stdout, 'the proxy answers an allowed name with its own address').toContain(`Address: ${pod?.status?.podIP}`);
      const other = await proxied.start({ image: IMAGE, network: { allow: ['b.berth.test'] } });
      envs.push(other);
      expect((await proxyPods()).map((p) => p.metadata?.name)).toEqual([pod?.metadata?.name]);
      await env.setNetwork('public');
      expect((await env.exec(['cat', '/etc/resolv.conf'])).stdout, "'public' gives the kubelet's resolv.conf back").toBe(kubelet);
      await env.teardown();
      expect((await proxyPods()).length, 'the proxy pod went while a sandbox still needed it').toBe(1);
      await other.teardown();
      expect(await proxyPods(), 'the proxy pod outlived its last sandbox').toEqual([]);
    } finally {
      await names.close();
    }
  });

  it('a proxy image the cluster cannot pull is a ConfigError naming options.egressProxy.image, before any sandbox pod; nothing is left', async () => {
    const unpullable = createK8sBackend({
      kubeconfig: { file: BERTH_KUBECONFIG },
      namespace: NAMESPACE,
      tolerations: TOLERATE_FAULT,
      networkPolicy: { probe: { host: bridge.host, port: bridge.port } },
      egressProxy: { image: '127.0.0.1:5000/berth/does-not-exist:nope' },
    });
    const failed = await unpullable.start({ image: IMAGE, network: { allow: ['a.berth.test'] } }).catch((e: unknown) => e);
    expect(ConfigError.isInstance(failed), String(failed)).toBe(true);
    expect(failed).toMatchObject({ path: 'options.egressProxy.image' });
    expect((failed as Error).message).toMatch(/127\.0\.0\.1:5000\/berth\/does-not-exist:nope.*did not start: (ErrImagePull|ImagePullBackOff)/);
    for (let i = 0; i < 100 && (await proxyPods()).length > 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(await proxyPods()).toEqual([]);
  });
});
