// berth on Modal's V2 sandbox RPCs, against the simulator (which, as Modal does, requires a valid
// x-modal-auth-token on every V2 call and refuses V1 RPCs for V2 sandboxes and the reverse): the
// whole life of a sandbox goes on V2 with one AuthTokenGet; a refused token is fetched again once;
// GPU sandboxes and options.sandboxApi 'v1' stay on V1.
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '@berth/core';
import { createModalBackend } from '@berth/backend-modal';
import { Code } from '@berth/test-support/modal-sim/grpc-server';
import { ModalSimulator } from '@berth/test-support/modal-sim';

const sim = await ModalSimulator.start({ longPollMs: 2000 });
const backend = createModalBackend({ ...sim.clientOptions(), guardian: false });
const v1 = createModalBackend({ ...sim.clientOptions(), guardian: false, sandboxApi: 'v1' });
afterAll(async () => {
  await backend.close();
  await v1.close();
  await sim.close();
});

/** The RPC names of the calls served since `before`, with their codes. */
const since = (before: number) => sim.calls.slice(before).map((c) => ({ rpc: c.path.split('/').pop() ?? '', code: c.code }));
const SANDBOX_RPC = /^(Sandbox|TaskGetCommandRouterAccess|SecretGetOrCreate|AuthTokenGet)/;

describe('V2 sandbox RPCs (simulated)', () => {
  it('a sandbox is made, run, read and ended on V2 with one auth token; env goes inline (no ephemeral secret)', async () => {
    const before = sim.calls.length;
    const issued = sim.authTokensIssued;
    {
      await using env = await backend.start({ image: 'berth-test/busybox:latest', env: { GREETING: 'hello v2' } });
      await expect(env.exec('echo "$GREETING"')).resolves.toMatchObject({ stdout: 'hello v2\n' });
    }
    const rpcs = since(before).filter((c) => SANDBOX_RPC.test(c.rpc));
    const names = new Set(rpcs.map((c) => c.rpc));
    for (const rpc of ['AuthTokenGet', 'SandboxCreateV2', 'SandboxGetTaskIdV2', 'SandboxGetCommandRouterAccess', 'SandboxTerminateV2'])
      expect(names).toContain(rpc);
    for (const rpc of [
      'SandboxCreate',
      'SandboxGetTaskId',
      'SandboxWait',
      'SandboxTerminate',
      'SandboxList',
      'TaskGetCommandRouterAccess',
      'SecretGetOrCreate',
    ])
      expect(names).not.toContain(rpc);
    expect(rpcs.every((c) => c.code === 0)).toBe(true);
    expect(sim.authTokensIssued - issued).toBeLessThanOrEqual(1);
  });

  it('an auth token the server stops accepting is fetched again once, and the call succeeds', async () => {
    await using env = await backend.start({ image: 'berth-test/busybox:latest' });
    const issued = sim.authTokensIssued;
    sim.faults.expireAuthTokens();
    const before = sim.calls.length;
    // Listing (the sweep's call) is a V2 call that needs the token.
    const swept = await backend.sweep({ dryRun: true, olderThanMs: 0 }).catch((error: unknown) => error);
    expect(swept).not.toBeInstanceOf(Error);
    const list = since(before).filter((c) => c.rpc === 'SandboxListV2');
    expect(list.map((c) => c.code)).toEqual([Code.UNAUTHENTICATED, 0]);
    expect(sim.authTokensIssued - issued).toBe(1);
    await expect(env.exec('echo still')).resolves.toMatchObject({ stdout: 'still\n' });
  });

  it("options.sandboxApi 'v1' makes the sandbox on V1 (env through an ephemeral secret); anything else is a ConfigError", async () => {
    const before = sim.calls.length;
    {
      await using env = await v1.start({ image: 'berth-test/busybox:latest', env: { GREETING: 'hello v1' } });
      await expect(env.exec('echo "$GREETING"')).resolves.toMatchObject({ stdout: 'hello v1\n' });
    }
    const names = new Set(since(before).map((c) => c.rpc));
    for (const rpc of ['SecretGetOrCreate', 'SandboxCreate', 'SandboxGetTaskId', 'TaskGetCommandRouterAccess', 'SandboxTerminate'])
      expect(names).toContain(rpc);
    for (const rpc of ['SandboxCreateV2', 'SandboxGetTaskIdV2', 'SandboxGetCommandRouterAccess', 'SandboxTerminateV2']) expect(names).not.toContain(rpc);
    expect(() => createModalBackend({ ...sim.clientOptions(), sandboxApi: 'v3' as 'v1' })).toThrow(ConfigError);
  });

  it('a GPU sandbox is made on V1, as the SDK makes one', async () => {
    const before = sim.calls.length;
    {
      await using env = await backend.start({ image: 'berth-test/busybox:latest', resources: { gpus: 1 } });
      await expect(env.exec('echo gpu')).resolves.toMatchObject({ stdout: 'gpu\n' });
    }
    const names = new Set(since(before).map((c) => c.rpc));
    expect(names).toContain('SandboxCreate');
    expect(names).not.toContain('SandboxCreateV2');
  });
});
