// Network switching on Modal, against the simulator: what SandboxCreate asks for (an allowlist
// policy when the sandbox may switch, BLOCKED/OPEN otherwise), the policies setNetwork sends through
// the router's TaskSetNetworkAccess, and how its failures reach the caller. Whether the state holds
// from inside is the conformance cases' (capabilities.network-switch, capabilities.network-none).
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, SandboxLostError, type Environment } from '@berth/core';
import { createModalBackend } from '@berth/backend-modal';
import { switchedAccess } from '../src/network-access.js';
import { encodeMessage } from '../src/wire/protobuf.js';
import { Code, ModalSimulator } from '@berth/test-support/modal-sim';

const IMAGE = 'berth-test/busybox:latest';
const EMPTY = { network_access_type: 'ALLOWLIST' };
const ALLOW_ALL = { network_access_type: 'ALLOWLIST', allowed_cidrs: ['0.0.0.0/0'], allowed_domains: ['*'] };

const sim = await ModalSimulator.start();
const backend = createModalBackend(sim.clientOptions());
afterAll(async () => {
  await backend.close();
  await sim.close();
});

/** The simulator's id for the one sandbox this test has running. */
async function sandboxId(): Promise<string> {
  const ids = await sim.sandboxes();
  expect(ids).toHaveLength(1);
  return ids[0]!;
}

const setCalls = () => sim.calls.filter((c) => c.path.endsWith('/TaskSetNetworkAccess'));
const failure = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

describe('network switching on Modal (simulated)', () => {
  it('encodes TaskSetNetworkAccessRequest with the field numbers of task_command_router.proto and api.proto', () => {
    const str = (field: number, s: string) => [(field << 3) | 2, Buffer.byteLength(s), ...Buffer.from(s)];
    // NetworkAccess{network_access_type = 1: ALLOWLIST (3), allowed_cidrs = 2, allowed_domains = 3}
    const open = [0x08, 3, ...str(2, '0.0.0.0/0'), ...str(3, '*')];
    const request = (access: number[]) => Buffer.from([...str(1, 'ta-1'), 0x12, access.length, ...access]).toString('hex');
    const encode = (mode: 'public' | 'none') =>
      Buffer.from(encodeMessage('TaskSetNetworkAccessRequest', { task_id: 'ta-1', network_access: switchedAccess(mode) })).toString('hex');
    expect(encode('public')).toBe(request(open));
    expect(encode('none')).toBe(request([0x08, 3]));
  });

  it("a switchable sandbox is made with an allowlist policy (empty for 'none'), never BLOCKED", async () => {
    await using env = await backend.start({ image: IMAGE, network: 'none', networkSwitch: true });
    const def = sim.definition(await sandboxId());
    expect(def?.network_access).toEqual(EMPTY);
    expect(def?.block_network ?? false).toBe(false);
    expect(env.network).toBe('none');
  });

  it("a switchable 'public' sandbox is made with the allow-all allowlist", async () => {
    await using _env = await backend.start({ image: IMAGE, network: 'public', networkSwitch: true });
    expect(sim.definition(await sandboxId())?.network_access).toEqual(ALLOW_ALL);
  });

  it("a sandbox that keeps its network is made BLOCKED ('none') or OPEN ('public')", async () => {
    {
      await using _env = await backend.start({ image: IMAGE, network: 'none' });
      const def = sim.definition(await sandboxId());
      expect(def).toMatchObject({ block_network: true, network_access: { network_access_type: 'BLOCKED' } });
    }
    await using _env = await backend.start({ image: IMAGE, network: 'public' });
    expect(sim.definition(await sandboxId())?.network_access).toEqual({ network_access_type: 'OPEN' });
  });

  it('setNetwork sends the allow-all allowlist for public and the empty one for none, once per change', async () => {
    await using env = await backend.start({ image: IMAGE, network: 'none', networkSwitch: true });
    const id = await sandboxId();
    const before = setCalls().length;
    await env.setNetwork('public');
    expect(sim.network(id)).toEqual({ access: ALLOW_ALL, attached: true });
    await env.setNetwork('public'); // already there: no call
    expect(setCalls().length).toBe(before + 1);
    await env.setNetwork('none');
    expect(sim.network(id)).toEqual({ access: EMPTY, attached: false });
    expect(setCalls().length).toBe(before + 2);
  });

  it('a transient router failure is retried; an expired router JWT is renewed', async () => {
    await using env = await backend.start({ image: IMAGE, network: 'none', networkSwitch: true });
    sim.faults.failNext('TaskSetNetworkAccess', Code.UNAVAILABLE, 'worker busy');
    await env.setNetwork('public');
    expect(env.network).toBe('public');
    sim.faults.expireRouterJwts();
    await env.setNetwork('none');
    expect(sim.network(await sandboxId())?.attached).toBe(false);
    expect(
      setCalls()
        .slice(-4)
        .map((c) => c.code),
    ).toEqual([Code.UNAVAILABLE, 0, Code.UNAUTHENTICATED, 0]);
  });

  it("a refused policy is a ConfigError and the environment's network stays what it was", async () => {
    await using env = await backend.start({ image: IMAGE, network: 'none', networkSwitch: true });
    sim.faults.failNext('TaskSetNetworkAccess', Code.INVALID_ARGUMENT, 'only ALLOWLIST network access can be set');
    const error = await failure(env.setNetwork('public'));
    expect(ConfigError.isInstance(error), String(error)).toBe(true);
    expect((error as Error).message).toMatch(/only ALLOWLIST/);
    expect(env.network).toBe('none');
    expect(sim.network(await sandboxId())?.attached).toBe(false);
  });

  it('switching a sandbox that vanished is a SandboxLostError', async () => {
    const env: Environment = await backend.start({ image: IMAGE, network: 'public', networkSwitch: true });
    await sim.faults.vanish(await sandboxId());
    const error = await failure(env.setNetwork('none'));
    expect(SandboxLostError.isInstance(error), String(error)).toBe(true);
    await env.teardown();
  });
});
