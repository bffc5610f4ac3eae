// SandboxRpcs (src/wire/sandbox-rpcs.ts) over a fake control plane: which RPC each call makes, by
// the sandbox id's shape as Modal's SDK decides; what V2 sends (env inline, auth, the sandbox's own
// token back) and what V1 sends instead.
import { describe, expect, it } from 'vitest';
import { SandboxRpcs, sandboxApiVersion } from '../src/wire/sandbox-rpcs.js';
import type { ControlPlane } from '../src/wire/modal-api.js';

const V1_ID = `sb-${'a'.repeat(22)}`;
const V2_ID = `sb-${'b'.repeat(26)}`;

interface Call {
  method: string;
  value: Record<string, unknown>;
  opts: { auth?: boolean; metadata?: Record<string, string>; idleTimeoutMs?: number };
}

function fake(answers: Record<string, Record<string, unknown>> = {}) {
  const calls: Call[] = [];
  const control = {
    call: async (method: string, _req: string, value: Record<string, unknown>, _res: string, opts: Call['opts'] = {}) => {
      calls.push({ method, value, opts });
      return answers[method] ?? {};
    },
    ephemeralSecret: async () => {
      calls.push({ method: 'SecretGetOrCreate', value: {}, opts: {} });
      return 'st-1';
    },
  };
  return { calls, rpcs: new SandboxRpcs(control as unknown as ControlPlane) };
}

describe('SandboxRpcs', () => {
  it("reads an id's generation as the SDK does", () => {
    expect(sandboxApiVersion(V1_ID)).toBe(1);
    expect(sandboxApiVersion(V2_ID)).toBe(2);
    expect(sandboxApiVersion(`sb-${'a'.repeat(21)}-`)).toBe(2);
  });

  it('V2: env inline in secret_sources, x-modal-auth-token asked for, task id and router access from the answer, the sandbox token sent back until terminated', async () => {
    const { calls, rpcs } = fake({
      SandboxCreateV2: { sandbox_id: V2_ID, task_id: 'ta-1', command_router_access: { jwt: 'j', url: 'https://r' }, sandbox_token: 'st-secret' },
    });
    const created = await rpcs.create(2, { appId: 'ap-1', definition: { image_id: 'im-1' }, tags: { a: 'b' }, env: { K: 'v' } });
    expect(created).toEqual({ sandboxId: V2_ID, taskId: 'ta-1', routerAccess: { jwt: 'j', url: 'https://r' } });
    expect(calls[0]).toMatchObject({
      method: 'SandboxCreateV2',
      value: {
        app_id: 'ap-1',
        definition: { image_id: 'im-1' },
        tags: [{ tag_name: 'a', tag_value: 'b' }],
        secret_sources: [{ env: { contents: { K: 'v' } } }],
      },
      opts: { auth: true },
    });
    await rpcs.taskId(V2_ID, 55);
    await rpcs.wait(V2_ID, 0);
    await rpcs.routerAccess(V2_ID, 'ta-1');
    await rpcs.terminate(V2_ID);
    await rpcs.wait(V2_ID, 0);
    expect(calls.slice(1).map((c) => [c.method, c.opts.auth, c.opts.metadata?.['x-modal-sandbox-token']])).toEqual([
      ['SandboxGetTaskIdV2', true, 'st-secret'],
      ['SandboxWaitV2', true, 'st-secret'],
      ['SandboxGetCommandRouterAccess', true, 'st-secret'],
      ['SandboxTerminateV2', true, 'st-secret'],
      ['SandboxWaitV2', true, undefined],
    ]);
    // The SDK sends neither timeout nor wait_until_ready on SandboxGetTaskIdV2; access is asked by sandbox.
    expect(calls[1]?.value).toEqual({ sandbox_id: V2_ID });
    expect(calls[3]?.value).toEqual({ sandbox_id: V2_ID });
  });

  it('V1: env through an ephemeral secret, no auth token, the long-poll, access by task', async () => {
    const { calls, rpcs } = fake({ SandboxCreate: { sandbox_id: V1_ID } });
    await rpcs.create(1, { appId: 'ap-1', definition: { image_id: 'im-1' }, tags: {}, env: { K: 'v' } });
    await rpcs.taskId(V1_ID, 55);
    await rpcs.routerAccess(V1_ID, 'ta-1');
    await rpcs.terminate(V1_ID);
    expect(calls.map((c) => [c.method, c.opts.auth ?? false])).toEqual([
      ['SecretGetOrCreate', false],
      ['SandboxCreate', false],
      ['SandboxGetTaskId', false],
      ['TaskGetCommandRouterAccess', false],
      ['SandboxTerminate', false],
    ]);
    expect(calls[1]?.value).toMatchObject({ definition: { secret_ids: ['st-1'] } });
    expect(calls[1]?.value).not.toHaveProperty('secret_sources');
    expect(calls[2]?.value).toEqual({ sandbox_id: V1_ID, timeout: 55, wait_until_ready: true });
    expect(calls[3]?.value).toEqual({ task_id: 'ta-1' });
  });

  it('lists on V2 by default and on V1 when told; no env, no secret_sources', async () => {
    const v2 = fake();
    await v2.rpcs.list('ap-1', { m: 'true' });
    expect(v2.calls[0]).toMatchObject({
      method: 'SandboxListV2',
      value: { app_id: 'ap-1', tags: [{ tag_name: 'm', tag_value: 'true' }] },
      opts: { auth: true },
    });
    const v1 = new SandboxRpcs({ call: async (method: string) => (v2.calls.push({ method, value: {}, opts: {} }), {}) } as unknown as ControlPlane, 1);
    await v1.list('ap-1', {});
    expect(v2.calls[1]?.method).toBe('SandboxList');
    const bare = fake({ SandboxCreateV2: { sandbox_id: V2_ID } });
    await bare.rpcs.create(2, { appId: 'ap-1', definition: {}, tags: {}, env: {} });
    expect(bare.calls[0]?.value).not.toHaveProperty('secret_sources');
  });
});
