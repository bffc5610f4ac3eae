// The simulator's side of Modal's V2 sandboxes, as the Python SDK drives them by default: the
// workspace RPCs before them (environment, auth token), SandboxCreateV2 with secret_sources and
// tags, task ids and router access by sandbox or task, the sandbox's own stdio through the router
// (live and after it ended), tags, listing, terminate and wait, and V1 and V2 ids kept apart.
// Needs the Docker engine and berth-test/busybox:latest.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness } from '@berth/test-support/modal-sim/harness';
import { Code, ModalSimulator, sandboxVersionOf } from '@berth/test-support/modal-sim';

const BUSYBOX = 'berth-test/busybox:latest';

let sim: ModalSimulator;
let h: Harness;
let appId: string;
let image: string;

beforeAll(async () => {
  sim = await ModalSimulator.start({ longPollMs: 2000, imageBuilderVersion: '2024.10' });
  h = new Harness(sim);
  appId = await h.app('berth-sim-v2');
  const built = await h.build(appId, [`FROM ${BUSYBOX}`]);
  expect(built.result).toMatchObject({ status: 'GENERIC_STATUS_SUCCESS' });
  image = built.imageId;
});

afterAll(async () => {
  h?.close();
  await sim?.close();
});

const payload = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString()) as { exp: number };

/** Reads a V2 sandbox's stdout or stderr from `offset` until the stream ends. */
async function stdio(taskId: string, jwt: string, fd: 'STDOUT' | 'STDERR', offset = 0) {
  const r = await h.router('SandboxStdioReadV2', { task_id: taskId, offset, file_descriptor: `SANDBOX_STDIO_FILE_DESCRIPTOR_${fd}` }, jwt);
  return {
    code: r.code,
    message: r.message,
    text: Buffer.concat(r.messages.map((m) => Buffer.from(m.data as Uint8Array))).toString(),
    starts: r.messages.map((m) => Number(m.starting_offset ?? 0)),
  };
}

describe('workspace RPCs', () => {
  it('EnvironmentGetOrCreate gives the default environment with the configured image builder version; ClientHello too', async () => {
    const env = await h.ok('EnvironmentGetOrCreate', {});
    expect(env).toMatchObject({ environment_id: expect.stringMatching(/^en-/), metadata: { name: 'main', settings: { image_builder_version: '2024.10' } } });
    expect(await h.ok('EnvironmentGetOrCreate', { deployment_name: 'main' })).toMatchObject({ environment_id: env.environment_id });
    expect((await h.cp('EnvironmentGetOrCreate', { deployment_name: 'nope' })).code).toBe(Code.NOT_FOUND);
    expect(await h.ok('ClientHello', {})).toStrictEqual({ image_builder_version: '2024.10' });
  });

  it('AuthTokenGet hands out JWTs with exp; V2 RPCs refuse a missing, unknown or expired one', async () => {
    const token = String((await h.ok('AuthTokenGet', {})).token);
    expect(payload(token).exp).toBeGreaterThan(Date.now() / 1000 + 3000);
    const list = { app_id: appId };
    expect((await h.cp('SandboxListV2', list)).code).toBe(Code.UNAUTHENTICATED);
    expect((await h.cp('SandboxListV2', list, { 'x-modal-auth-token': 'a.b.c' })).code).toBe(Code.UNAUTHENTICATED);
    expect((await h.cp('SandboxListV2', list, { 'x-modal-auth-token': token })).code).toBe(0);
    sim.faults.expireAuthTokens();
    const expired = await h.cp('SandboxListV2', list, { 'x-modal-auth-token': token });
    expect({ code: expired.code, message: expired.message }).toStrictEqual({ code: Code.UNAUTHENTICATED, message: 'invalid x-modal-auth-token' });
    const fresh = String((await h.ok('AuthTokenGet', {})).token);
    expect((await h.cp('SandboxListV2', list, { 'x-modal-auth-token': fresh })).code).toBe(0);
    // The harness's cached token went with the others.
    h.close();
    h = new Harness(sim);
  });

  it('SecretGetOrCreate and SecretGetInfo carry metadata with the keys (the SDK infers a registry secret from them)', async () => {
    sim.addSecret('v2-creds', { REGISTRY_USERNAME: 'u', REGISTRY_PASSWORD: 'p' });
    const named = await h.ok('SecretGetOrCreate', { deployment_name: 'v2-creds' });
    expect(named.metadata).toStrictEqual({ name: 'v2-creds', keys: ['REGISTRY_USERNAME', 'REGISTRY_PASSWORD'] });
    const inline = await h.ok('SecretGetOrCreate', {
      object_creation_type: 'OBJECT_CREATION_TYPE_ANONYMOUS_OWNED_BY_APP',
      env_dict: { A: '1' },
      app_id: appId,
    });
    expect(inline.metadata).toStrictEqual({ keys: ['A'] });
    expect(await h.ok('SecretGetInfo', { secret_id: named.secret_id })).toStrictEqual({ metadata: named.metadata });
  });
});

describe('V2 sandboxes', () => {
  it('create with secret_sources and tags: a V2-shaped id, env from secrets and inline maps, tags, and no V1 RPC serves it', async () => {
    sim.addSecret('v2-env', { FROM_SECRET: 'stored' });
    const secretId = String((await h.ok('SecretGetOrCreate', { deployment_name: 'v2-env' })).secret_id);
    const sandboxId = await h.sandboxV2(
      appId,
      image,
      {},
      { tags: [{ tag_name: 'team', tag_value: 'a' }], secret_sources: [{ secret_id: secretId }, { env: { contents: { INLINE: 'yes' } } }] },
    );
    expect(sandboxId).toMatch(/^sb-[0-9A-Za-z]{26}$/);
    expect(sandboxVersionOf(sandboxId)).toBe(2);
    const { task_id: taskId } = await h.taskIdV2(sandboxId);
    const access = await h.v2Ok('SandboxGetCommandRouterAccess', { sandbox_id: sandboxId });
    expect(access).toMatchObject({ url: sim.routerUrl, jwt: expect.any(String) });
    expect(await h.v2Ok('SandboxGetCommandRouterAccess', { task_id: taskId })).toMatchObject({ url: sim.routerUrl });
    const jwt = String(access.jwt);

    // The sandbox's env, and an exec's own env sent as the SDK sends it (secret_sources).
    const execId = await h.exec(String(taskId), jwt, ['sh', '-c', 'echo "$FROM_SECRET $INLINE $EXEC_ONLY"'], {
      secret_sources: [{ env: { contents: { EXEC_ONLY: 'exec' } } }],
    });
    expect((await h.waitExec(String(taskId), jwt, execId)).code ?? 0).toBe(0);
    expect((await h.read(String(taskId), jwt, execId)).data.toString()).toBe('stored yes exec\n');

    expect(await h.v2Ok('SandboxTagsGetV2', { sandbox_id: sandboxId })).toStrictEqual({ tags: [{ tag_name: 'team', tag_value: 'a' }] });
    expect(await h.v2Ok('SandboxTagsSetV2', { sandbox_id: sandboxId, tags: [{ tag_name: 'team', tag_value: 'b' }] })).toStrictEqual({});
    expect((await h.v2Ok('SandboxTagsGetV2', { sandbox_id: sandboxId })).tags).toStrictEqual([{ tag_name: 'team', tag_value: 'b' }]);

    for (const rpc of ['SandboxWait', 'SandboxGetTaskId', 'SandboxTerminate', 'SandboxTagsGet']) {
      const r = await h.cp(rpc, { sandbox_id: sandboxId });
      expect({ rpc, code: r.code, message: r.message }).toStrictEqual({ rpc, code: Code.NOT_FOUND, message: expect.stringContaining('V2 sandbox') });
    }
    expect((await h.cp('TaskGetCommandRouterAccess', { task_id: taskId })).code).toBe(Code.NOT_FOUND);

    // Listing: V2 lists both kinds, V1 only its own.
    const v1 = await h.sandbox(appId, image);
    const listedV2 = ((await h.v2Ok('SandboxListV2', { app_id: appId })).sandboxes as Array<{ id: string; metadata: unknown }>).map((s) => s.id);
    expect(listedV2).toEqual(expect.arrayContaining([sandboxId, v1]));
    const listedV1 = ((await h.ok('SandboxList', { app_id: appId })).sandboxes as Array<{ id: string }>).map((s) => s.id);
    expect(listedV1).toContain(v1);
    expect(listedV1).not.toContain(sandboxId);
    expect((await h.v2('SandboxWaitV2', { sandbox_id: v1 })).code).toBe(Code.NOT_FOUND);
    // V1 tags.
    expect(await h.ok('SandboxTagsSet', { sandbox_id: v1, tags: [{ tag_name: 'k', tag_value: 'v' }] })).toStrictEqual({});
    expect(await h.ok('SandboxTagsGet', { sandbox_id: v1 })).toStrictEqual({ tags: [{ tag_name: 'k', tag_value: 'v' }] });
    await h.ok('SandboxTerminate', { sandbox_id: v1 });

    // Terminate and wait, as the SDK does (poll: timeout 0, then long polls).
    expect(await h.v2Ok('SandboxWaitV2', { sandbox_id: sandboxId, timeout: 0 })).toStrictEqual({});
    expect(await h.v2Ok('SandboxTerminateV2', { sandbox_id: sandboxId })).toStrictEqual({});
    expect((await h.v2Ok('SandboxWaitV2', { sandbox_id: sandboxId, timeout: 10 })).result).toMatchObject({ status: 'GENERIC_STATUS_TERMINATED' });
    expect(await h.v2Ok('SandboxTerminateV2', { sandbox_id: sandboxId })).toMatchObject({ existing_result: { status: 'GENERIC_STATUS_TERMINATED' } });
    // An ended V2 sandbox still names its task (the SDK needs it to read the output).
    expect(await h.v2Ok('SandboxGetTaskIdV2', { sandbox_id: sandboxId })).toMatchObject({
      task_id: taskId,
      task_result: { status: 'GENERIC_STATUS_TERMINATED' },
    });
  });

  it("the sandbox's own stdio: output from the first byte, stdin in offset order, reads from an offset, and after it exited", async () => {
    const script = 'echo started; echo oops >&2; while read -r line; do echo "got $line"; done; echo bye';
    const sandboxId = await h.sandboxV2(appId, image, { entrypoint_args: ['sh', '-c', script] });
    const taskId = String((await h.taskIdV2(sandboxId)).task_id);
    // Access fetched only now: the output written before is there all the same.
    const jwt = String((await h.v2Ok('SandboxGetCommandRouterAccess', { sandbox_id: sandboxId })).jwt);
    const write = (offset: number, data: string, eof = false) =>
      h.routerOk('SandboxStdinWriteV2', { task_id: taskId, offset, data: Buffer.from(data), eof }, jwt);
    await write(0, 'one\n');
    await write(0, 'one\ntwo\n'); // a retry with more: only "two" is new
    const gap = await h.router('SandboxStdinWriteV2', { task_id: taskId, offset: 99, data: Buffer.from('x') }, jwt);
    expect(gap.code).toBe(Code.OUT_OF_RANGE);
    await write(8, '', true);
    const result = await h.resultV2(sandboxId);
    expect(result).toMatchObject({ status: 'GENERIC_STATUS_SUCCESS' });

    // After the end: the whole output, and from an offset with the offset it starts at.
    expect(await stdio(taskId, jwt, 'STDOUT')).toMatchObject({ code: 0, text: 'started\ngot one\ngot two\nbye\n', starts: [0] });
    expect(await stdio(taskId, jwt, 'STDERR')).toMatchObject({ code: 0, text: 'oops\n' });
    expect(await stdio(taskId, jwt, 'STDOUT', 8)).toMatchObject({ code: 0, text: 'got one\ngot two\nbye\n', starts: [8] });
    // New access after the end works too; writing stdin does not.
    const late = String((await h.v2Ok('SandboxGetCommandRouterAccess', { sandbox_id: sandboxId })).jwt);
    expect((await stdio(taskId, late, 'STDOUT')).text).toBe('started\ngot one\ngot two\nbye\n');
    expect((await h.router('SandboxStdinWriteV2', { task_id: taskId, offset: 12, data: Buffer.from('x') }, late)).code).toBe(Code.NOT_FOUND);
  });

  it('a live read waits for output and ends when the sandbox does', async () => {
    const sandboxId = await h.sandboxV2(appId, image, { entrypoint_args: ['sh', '-c', 'sleep 1; echo late; sleep 600'] });
    const taskId = String((await h.taskIdV2(sandboxId)).task_id);
    const jwt = String((await h.v2Ok('SandboxGetCommandRouterAccess', { sandbox_id: sandboxId })).jwt);
    const reading = stdio(taskId, jwt, 'STDOUT');
    await new Promise((r) => setTimeout(r, 2500));
    await h.v2Ok('SandboxTerminateV2', { sandbox_id: sandboxId });
    expect(await reading).toMatchObject({ code: 0, text: 'late\n' });
  });

  it('a V1 sandbox has no stdio on the router', async () => {
    const v1 = await h.sandbox(appId, image);
    const taskId = await h.taskId(v1);
    const r = await stdio(taskId, await h.jwt(taskId), 'STDOUT');
    expect({ code: r.code, message: r.message }).toStrictEqual({ code: Code.NOT_FOUND, message: expect.stringContaining('SandboxGetLogs') });
    await h.ok('SandboxTerminate', { sandbox_id: v1 });
  });
});

describe('client versions', () => {
  it('refuses clients older than the minimum with FAILED_PRECONDITION, and warns in x-modal-warning', async () => {
    sim.faults.requireClientVersion('1.0.0');
    try {
      const old = await h.cp('AppGetOrCreate', { app_name: 'x' }, { 'x-modal-client-version': '0.67.18' });
      expect({ code: old.code, message: old.message }).toStrictEqual({
        code: Code.FAILED_PRECONDITION,
        message: 'The client version (0.67.18) is too old. Please update (pip install --upgrade modal).',
      });
      expect((await h.cp('AppGetOrCreate', { app_name: 'x' })).message).toContain('(unknown)');
      expect((await h.cp('AppGetOrCreate', { app_name: 'berth-sim-v2' }, { 'x-modal-client-version': '1.6.4' })).code).toBe(0);
      sim.faults.warnClients('Version 1.6.4 of `modal` will be deprecated. Please upgrade: 100%');
      const warned = await h.cp('AppGetOrCreate', { app_name: 'berth-sim-v2' }, { 'x-modal-client-version': '1.6.4' });
      expect(decodeURIComponent(String(warned.trailers['x-modal-warning']))).toBe('Version 1.6.4 of `modal` will be deprecated. Please upgrade: 100%');
      const refused = await h.cp('AppGetOrCreate', { app_name: 'x' }, { 'x-modal-client-version': '0.1' });
      expect(refused.trailersOnly).toBe(true);
      expect(refused.headers['x-modal-warning']).toBeDefined();
      expect(sim.calls.at(-1)).toMatchObject({ clientVersion: '0.1', code: Code.FAILED_PRECONDITION });
    } finally {
      sim.faults.requireClientVersion(undefined);
      sim.faults.warnClients(undefined);
    }
    expect((await h.cp('AppGetOrCreate', { app_name: 'berth-sim-v2' }, { 'x-modal-client-version': '0.1' })).trailers['x-modal-warning']).toBeUndefined();
  });
});
