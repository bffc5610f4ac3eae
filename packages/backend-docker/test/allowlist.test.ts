// network: { allow } on the local engine, for real: the sandbox's own packet filter, written by
// options.egressImage (test/setup/egress-image.sh), or the image berth makes, in its network namespace, checked from inside
// against two listeners on two of this machine's addresses that public sandboxes reach: the
// gateway of a bridge network of the test's own (options.publicNetwork) and the default bridge's
// gateway. The allowed one reached and the other not, in the same sandbox, after a public sandbox
// reached both. Names are resolved by berth (options.resolveHost here).
import { randomBytes, randomInt } from 'node:crypto';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { CapabilityError, ConfigError, type Environment, type NetworkNotice } from '@berth/core';
import { listenForTokens, reaches } from '@berth/conformance';
import { createDockerBackend } from '@berth/backend-docker';
import { bridgeGateway } from '@berth/test-support/docker-bridge';

const IMAGE = 'berth-test/busybox:latest';
const RUN = randomBytes(4).toString('hex');
const LABELS = { 'berth.test': 'allowlist', 'berth.test-run': RUN };
const docker = new Docker();
const NETWORK = `berth-test-allow-${RUN}`;
const SUBNET = `10.214.${randomInt(256)}`;
await docker.createNetwork({ Name: NETWORK, Driver: 'bridge', Labels: LABELS, IPAM: { Config: [{ Subnet: `${SUBNET}.0/24`, Gateway: `${SUBNET}.1` }] } });
const own = await listenForTokens(`${SUBNET}.1`);
const other = await listenForTokens(await bridgeGateway(docker));
const envs: Environment[] = [];
afterAll(async () => {
  await Promise.allSettled(envs.map((e) => e.teardown()));
  await own.close();
  await other.close();
  await docker.getNetwork(NETWORK).remove();
});

const resolved: string[] = [];
const backend = createDockerBackend({
  pullPolicy: 'never',
  labels: LABELS,
  publicNetwork: NETWORK,
  egressImage: 'berth-test/egress:latest',
  resolveHost: async (name) => {
    resolved.push(name);
    if (name === 'own.berth.test') return [own.host];
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
  },
});

async function start(spec: Parameters<typeof backend.start>[0]): Promise<Environment> {
  const env = await backend.start(spec);
  envs.push(env);
  return env;
}

describe('docker network allowlist, the sandbox own packet filter', () => {
  it('an allowed address is reached and another is not, from the same sandbox; no helper container is left', async () => {
    const open = await start({ image: IMAGE, network: 'public' });
    expect(await reaches(open, own), 'a public sandbox must reach its bridge gateway').toBe(true);
    expect(await reaches(open, other), "a public sandbox must reach the default bridge's gateway").toBe(true);

    const env = await start({ image: IMAGE, network: { allow: [own.host] } });
    expect(env.networkEnforcement.allowlist).toMatchObject({ addresses: 'packet', names: 'resolved', connections: 'ended' });
    expect(await reaches(env, own), 'the allowed address was not reached').toBe(true);
    expect(await reaches(env, other), 'an address the allowlist does not list was reached').toBe(false);
    const helpers = await docker.listContainers({ all: true, filters: { ancestor: ['berth-test/egress:latest'] } });
    expect(helpers).toEqual([]);
  });

  it('a range and a resolved name allow what they cover; switching none -> allowlist -> public -> none holds at each step', async () => {
    const env = await start({ image: IMAGE, network: 'none', networkSwitch: true });
    expect(await reaches(env, own)).toBe(false);
    await env.setNetwork({ allow: [`${other.host.split('.').slice(0, 3).join('.')}.0/24`] });
    expect(await reaches(env, other), 'the range covers the default bridge gateway').toBe(true);
    expect(await reaches(env, own)).toBe(false);
    await env.setNetwork({ allow: ['own.berth.test'] });
    expect(resolved).toContain('own.berth.test');
    expect(await reaches(env, own), "the name's resolved address was not reached").toBe(true);
    expect(await reaches(env, other), 'the previous allowlist still held after a new one').toBe(false);
    await env.setNetwork('public');
    expect(await reaches(env, other)).toBe(true);
    expect(await reaches(env, own)).toBe(true);
    await env.setNetwork('none');
    expect(await reaches(env, own)).toBe(false);
  });

  it("DNS: the engine's resolver answers a public sandbox and nothing under an allowlist, whose name resolves from /etc/hosts; 'public' undoes both", async () => {
    // The engine's own resolver (127.0.0.11 on a user-defined network) answers another container's
    // name by itself, so nothing is asked beyond this machine.
    const peer = await start({ image: IMAGE, network: 'public' });
    const env = await start({ image: IMAGE, network: 'public', networkSwitch: true });
    const peerAddress = async () => {
      const r = await env.exec(['nslookup', '-type=a', peer.id], { timeoutMs: 30_000 });
      return r.exitCode === 0 ? r.stdout.match(/Address:\s*(\d+\.\d+\.\d+\.\d+)\s*$/m)?.[1] : undefined;
    };
    const berthLines = async () => (await env.exec(['grep', '-c', 'berth-allowlist', '/etc/hosts'])).stdout.trim();
    const address = await peerAddress();
    expect(address, "a public sandbox must resolve another container's name through the engine's resolver").toMatch(/^10\.214\./);

    await env.setNetwork({ allow: ['own.berth.test'] });
    expect(await peerAddress(), 'a name the allowlist does not list resolved').toBeUndefined();
    expect(await reaches(env, { ...own, host: 'own.berth.test' }), "the allowlist's name did not resolve inside to its address, or was not reached").toBe(true);
    expect(await berthLines()).toBe('1');

    await env.setNetwork('public');
    expect(await peerAddress(), 'public did not give the engine resolver back').toBe(address);
    expect(await berthLines(), "berth's hosts lines outlived the allowlist").toBe('0');
  });

  it("options.egressProxy on a user-defined network: through none -> allowlist -> public -> none -> allowlist the allowed name resolves (the proxy answering) and another is refused; 'public' gives the engine's resolver back", async () => {
    // The engine's resolver here is on loopback (127.0.0.11), with nat rules it puts back at each
    // join: berth points resolv.conf at the proxy instead, and back on 'public'.
    const proxied = createDockerBackend({
      pullPolicy: 'never',
      labels: LABELS,
      publicNetwork: NETWORK,
      egressProxy: true,
      resolveHost: async (name) => {
        if (name === 'own.berth.test') return [own.host];
        throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
      },
    });
    const peer = await start({ image: IMAGE, network: 'public' });
    const env = await proxied.start({ image: IMAGE, network: 'none', networkSwitch: true });
    envs.push(env);
    const lookup = async (name: string) => {
      const r = await env.exec(['nslookup', '-type=a', name], { timeoutMs: 30_000 });
      return r.exitCode === 0 ? r.stdout.match(/Address:\s*(\d+\.\d+\.\d+\.\d+)\s*$/m)?.[1] : `failed: ${r.stdout.trim().split('\n').pop()}`;
    };
    const resolver = async () => (await env.exec(['cat', '/etc/resolv.conf'])).stdout.match(/^nameserver\s+(\S+)/m)?.[1];
    for (const round of [1, 2]) {
      await env.setNetwork({ allow: ['own.berth.test'] });
      expect(await lookup('own.berth.test'), `round ${round}: the allowed name did not resolve through the proxy`).toBe(own.host);
      expect(await lookup(peer.id), `round ${round}: a name the allowlist does not list resolved`).toMatch(/^failed: .*REFUSED/);
      await env.setNetwork('public');
      expect(await resolver(), `round ${round}: 'public' did not give the engine's resolver back`).toBe('127.0.0.11');
      expect(await lookup(peer.id), `round ${round}: the engine's resolver did not answer a public sandbox`).toMatch(/^10\.214\./);
      await env.setNetwork('none');
    }
  });

  it('a name whose address changes while the sandbox lives is followed (options.refreshNamesMs): the new address allowed and resolved, the old one not; a failed refresh is said and changes nothing', async () => {
    let moving: string | Error = own.host;
    const refreshing = createDockerBackend({
      pullPolicy: 'never',
      labels: LABELS,
      publicNetwork: NETWORK,
      egressImage: 'berth-test/egress:latest',
      refreshNamesMs: 200,
      resolveHost: async (name) => {
        if (name !== 'moving.berth.test') throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
        if (moving instanceof Error) throw moving;
        return [moving];
      },
    });
    const env = await refreshing.start({ image: IMAGE, network: { allow: ['moving.berth.test'] } });
    envs.push(env);
    const notices: NetworkNotice[] = [];
    env.events.on('network', (n) => notices.push(n));
    const byName = (l: typeof own) => reaches(env, { ...l, host: 'moving.berth.test' });
    expect(await byName(own), 'the name resolves to its first address, which is reached').toBe(true);
    expect(await reaches(env, other)).toBe(false);

    moving = other.host;
    for (let i = 0; i < 100 && notices.length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(notices[0]).toEqual({ kind: 'refreshed', hosts: [{ name: 'moving.berth.test', addresses: [other.host] }] });
    expect(await byName(other), 'the name now resolves to its new address, which is reached').toBe(true);
    expect(await reaches(env, own), 'the old address is still allowed after the name moved').toBe(false);

    moving = Object.assign(new Error('resolver down'), { code: 'ESERVFAIL' });
    for (let i = 0; i < 100 && notices.length < 2; i++) await new Promise((r) => setTimeout(r, 100));
    expect(notices[1]).toMatchObject({ kind: 'refresh-failed', error: { name: 'BackendUnavailableError' } });
    expect(await byName(other), 'a failed refresh changed what holds').toBe(true);
  });

  it("without options.egressImage berth makes the helper image on first use (labelled berth.egress, from this machine's iptables) and keeps it; another backend finds it again; its allowlist holds", async () => {
    const plain = createDockerBackend({ pullPolicy: 'never', labels: LABELS });
    const env = await plain.start({ image: IMAGE, network: { allow: [own.host] } });
    envs.push(env);
    expect(await reaches(env, own), 'the allowed address was not reached').toBe(true);
    expect(await reaches(env, other), 'an address the allowlist does not list was reached').toBe(false);
    const made = await docker.listImages({ filters: { label: ['berth.egress'] } });
    expect(made).toHaveLength(1);
    expect(made[0]!.RepoTags).toEqual([`berth/egress:${made[0]!.Labels['berth.egress']}`]);
    const again = await createDockerBackend({ pullPolicy: 'never', labels: LABELS }).start({ image: IMAGE, network: { allow: [other.host] } });
    envs.push(again);
    expect(await reaches(again, other)).toBe(true);
    expect(await reaches(again, own)).toBe(false);
    expect((await docker.listImages({ filters: { label: ['berth.egress'] } })).map((i) => i.Id)).toEqual([made[0]!.Id]);
    expect(await docker.listContainers({ all: true, filters: { ancestor: [made[0]!.RepoTags![0]!] } })).toEqual([]);
  });

  it('an egressImage without iptables-restore is a ConfigError naming the option; a wildcard is refused by name before anything is made', async () => {
    const wrong = createDockerBackend({ pullPolicy: 'never', labels: LABELS, egressImage: IMAGE });
    const refused = await wrong.start({ image: IMAGE, network: { allow: [own.host] } }).catch((e: unknown) => e);
    expect(ConfigError.isInstance(refused), String(refused)).toBe(true);
    expect((refused as ConfigError).path).toBe('options.egressImage');
    expect((refused as Error).message).toContain(`the allowlist's rules could not be applied with ${IMAGE}`);
    const wildcard = await backend.start({ image: IMAGE, network: { allow: ['*.berth.test'] } }).catch((e: unknown) => e);
    expect(CapabilityError.isInstance(wildcard), String(wildcard)).toBe(true);
    expect(await docker.listContainers({ all: true, filters: { label: [`berth.test-run=${RUN}`] } })).toHaveLength(envs.length);
  });
});
