// network: { allow } on the test cluster, for real: each pod's own NetworkPolicy of IP blocks,
// enforced by kube-router, checked from inside the pods against two listeners on this machine's
// two addresses public pods reach (both on the pods' bridge): the allowed one reached, the
// other not, in the same pod (the positive control is the allowed one, and a public pod first
// reaches both). Names are resolved by berth (options.resolveHost here: the test
// cluster has no DNS).
import { NetworkingV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { CapabilityError, type Environment, type NetworkNotice } from '@berth/core';
import { listenForTokens, reaches } from '@berth/conformance';
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
