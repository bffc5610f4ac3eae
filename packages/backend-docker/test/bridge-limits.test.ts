// A full bridge is a typed, retryable berth error naming the limit and the fix, never the
// engine's words alone (issue 31, item 7). Both ceilings are made for real, cheaply, on small
// networks of the test's own (options.publicNetwork), never on the engine's default bridge that
// other tests use: a /29 subnet holds 5 sandboxes; a bridge whose 1,023 ports (Linux's limit) are
// taken by veth pairs, made in a second and removed with their network namespace, holds none.
import { execFileSync } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { readdirSync } from 'node:fs';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { BackendUnavailableError, type BerthError, ConfigError, type Environment } from '@berth/core';
import { createDockerBackend } from '@berth/backend-docker';

const IMAGE = 'berth-test/busybox:latest';
const RUN = randomBytes(4).toString('hex');
const LABELS = { 'berth.test': 'bridge-limits', 'berth.test-run': RUN };
const docker = new Docker();
const envs: Environment[] = [];
const networks: string[] = [];
const namespaces: string[] = [];

afterAll(async () => {
  await Promise.allSettled(envs.map((env) => env.teardown()));
  for (const ns of namespaces) execFileSync('ip', ['netns', 'del', ns]);
  for (const name of networks) await docker.getNetwork(name).remove();
});

/** A bridge network of the test's own, labelled, on a subnet of 10.213.0.0/16 (a random third octet, so concurrent runs rarely meet). */
async function network(kind: string, prefix: number, bridge?: string): Promise<string> {
  const name = `berth-test-${kind}-${RUN}`;
  await docker.createNetwork({
    Name: name,
    Driver: 'bridge',
    Labels: LABELS,
    IPAM: { Config: [{ Subnet: `10.213.${randomInt(256)}.0/${prefix}` }] },
    ...(bridge ? { Options: { 'com.docker.network.bridge.name': bridge } } : {}),
  });
  networks.push(name);
  return name;
}

/** What a start ends with: its environment, or the error it threw. */
async function attempt(backend: ReturnType<typeof createDockerBackend>): Promise<Environment | unknown> {
  try {
    const env = await backend.start({ image: IMAGE, network: 'public' });
    envs.push(env);
    return env;
  } catch (error) {
    return error;
  }
}

function expectFull(error: unknown, says: RegExp): void {
  expect(BackendUnavailableError.isInstance(error), String(error)).toBe(true);
  const e = error as BerthError;
  expect(e.retryable).toBe(true);
  // berth's words first (the limit, then the fix), the engine's kept as the cause.
  expect(e.message).toMatch(/^network 'public' is full: bridge network "berth-test-/);
  expect(e.message).toMatch(says);
  expect(e.message).toMatch(/options\.publicNetwork/);
  expect(e.message).toMatch(/network 'none'/);
}

describe('a full bridge', () => {
  it('with no address left in its subnet is a retryable BackendUnavailableError saying so; a start after one ended succeeds', async () => {
    const backend = createDockerBackend({ pullPolicy: 'never', publicNetwork: await network('tiny', 29), labels: LABELS });
    // A /29 has 8 addresses: the network's, the broadcast and the gateway's leave 5 for sandboxes.
    const five = await Promise.all(Array.from({ length: 5 }, () => attempt(backend)));
    expect(five.filter((r) => r instanceof Error)).toEqual([]);
    const sixth = await attempt(backend);
    expectFull(sixth, /no free address left in its subnet/);
    expect(String((sixth as BerthError).cause)).toMatch(/no available IPv4 addresses/i);

    await (five[0] as Environment).teardown();
    const again = await attempt(backend);
    expect(again instanceof Error ? String(again) : 'started').toBe('started');
  });

  it(`with all its ports taken (a Linux bridge's 1,023) is a retryable BackendUnavailableError saying so; a start after one freed succeeds`, async () => {
    const bridge = `bp-${RUN}`;
    const backend = createDockerBackend({ pullPolicy: 'never', publicNetwork: await network('ports', 24, bridge), labels: LABELS });
    const ns = `berth-test-${RUN}`;
    execFileSync('ip', ['netns', 'add', ns]);
    namespaces.push(ns);
    // Each pair's host end on the bridge, its peer in the namespace: deleting the namespace removes them all at once.
    const pairs = Array.from(
      { length: 1023 },
      (_, i) => `link add bv${RUN.slice(0, 4)}${i} type veth peer name p${i} netns ${ns}\nlink set bv${RUN.slice(0, 4)}${i} master ${bridge}\n`,
    );
    execFileSync('ip', ['-batch', '-'], { input: pairs.join('') });
    expect(readdirSync(`/sys/class/net/${bridge}/brif`)).toHaveLength(1023);

    const refused = await attempt(backend);
    expectFull(refused, /no port left for the sandbox \(a Linux bridge takes at most 1023 interfaces/);
    expect(String((refused as BerthError).cause)).toMatch(/exchange full/i);

    execFileSync('ip', ['netns', 'exec', ns, 'ip', 'link', 'del', 'p0']);
    const again = await attempt(backend);
    expect(again instanceof Error ? String(again) : 'started').toBe('started');
  });

  it('that does not exist (options.publicNetwork misspelt) is a ConfigError naming the option', async () => {
    const backend = createDockerBackend({ pullPolicy: 'never', publicNetwork: `berth-test-missing-${RUN}`, labels: LABELS });
    const error = await attempt(backend);
    expect(ConfigError.isInstance(error), String(error)).toBe(true);
    expect((error as ConfigError).path).toBe('options.publicNetwork');
    expect((error as ConfigError).message).toMatch(/does not have: create it \(docker network create berth-test-missing-/);
  });
});
