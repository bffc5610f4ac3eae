// The Modal simulator, driven by a raw gRPC client (node:http2 + the simulator's own codec):
// auth, apps, secrets, real image pulls from the loopback registry, sandboxes as containers, exec
// through the router, and every fault hook. Nothing here leaves 127.0.0.0/8.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness } from '@berth/test-support/modal-sim/harness';
import { Code, IMAGE_REPO, imageTag, ModalSimulator, SIM_LABEL, SimCodec } from '@berth/test-support/modal-sim';
import { RawClient } from '@berth/test-support/modal-sim/raw-client';
import { parseTextFormat, stripDefaults } from './support/text-format.js';

const docker = new Docker();
const PRIVATE = '127.0.0.1:5000/berth/private-busybox';
const BUSYBOX = 'berth-test/busybox:latest';
const CREDS = { REGISTRY_USERNAME: 'berth', REGISTRY_PASSWORD: 'berth-test-secret' };
const STATIC = 'REGISTRY_AUTH_TYPE_STATIC_CREDS';

let sim: ModalSimulator;
let h: Harness;
let appId: string;
let busyboxImage: string;

beforeAll(async () => {
  sim = await ModalSimulator.start({ longPollMs: 2000 });
  h = new Harness(sim);
  appId = await h.app();
  const built = await h.build(appId, [`FROM ${BUSYBOX}`]);
  expect(built.result).toMatchObject({ status: 'GENERIC_STATUS_SUCCESS' });
  busyboxImage = built.imageId;
});

afterAll(async () => {
  h?.close();
  await sim?.close();
});

/** A running sandbox on busybox, its task, and a router JWT for it. */
async function running(definition = {}, extra = {}) {
  const sandboxId = await h.sandbox(appId, busyboxImage, definition, extra);
  const taskId = await h.taskId(sandboxId);
  return { sandboxId, taskId, jwt: await h.jwt(taskId) };
}

/** Polls `ready` until true; throws saying what never happened. */
async function until(ready: () => boolean, withinMs: number, what: string): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`waited ${withinMs} ms for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const simContainers = async (value?: string) =>
  docker.listContainers({ all: true, filters: { label: [value ? `${SIM_LABEL}=${value}` : SIM_LABEL, `berth.owner-pid=${process.pid}`] } });

describe('simulator codec', () => {
  const vectors = JSON.parse(readFileSync(new URL('./fixtures/vectors.json', import.meta.url), 'utf8')) as Array<{
    message: string;
    text: string;
    hex: string;
  }>;
  const codec = SimCodec.load();
  it.each(vectors.map((v) => [`${v.message} ${v.text.slice(0, 50)}`, v] as const))('matches protoc: %s', (_, v) => {
    const name = v.message.replace(/^modal\.(client|task_command_router)\./, '');
    const value = parseTextFormat(name, v.text);
    expect(Buffer.from(codec.encode(v.message, value)).toString('hex')).toBe(v.hex);
    expect(codec.decode(v.message, Buffer.from(v.hex, 'hex'))).toStrictEqual(stripDefaults(name, value));
  });
});

describe('control plane', () => {
  it('refuses a wrong token (trailers-only UNAUTHENTICATED) and router calls without a valid JWT', async () => {
    const stranger = new Harness(sim, { 'x-modal-token-id': sim.tokenId, 'x-modal-token-secret': 'wrong' });
    const r = await stranger.cp('AppGetOrCreate', { app_name: 'x', object_creation_type: 'OBJECT_CREATION_TYPE_CREATE_IF_MISSING' });
    expect(r).toMatchObject({ code: Code.UNAUTHENTICATED, trailersOnly: true, messages: [] });
    expect((await stranger.router('TaskExecPoll', { task_id: 'ta-x', exec_id: 'e' }, 'not-a-jwt')).code).toBe(Code.UNAUTHENTICATED);
    stranger.close();
  });

  it('gets or creates apps by name', async () => {
    const lookup = { app_name: 'sim-apps', object_creation_type: 'OBJECT_CREATION_TYPE_UNSPECIFIED' };
    expect(await h.cp('AppGetOrCreate', lookup)).toMatchObject({ code: Code.NOT_FOUND, message: "App 'sim-apps' not found" });
    const id = await h.app('sim-apps');
    expect(id).toMatch(/^ap-\w{22}$/);
    expect(await h.app('sim-apps')).toBe(id);
    expect(await h.ok('AppGetOrCreate', lookup)).toEqual({ app_id: id });
  });

  it('finds named secrets, checks required keys, and makes ephemeral ones', async () => {
    const named = { deployment_name: 'sim-creds', required_keys: ['REGISTRY_USERNAME', 'REGISTRY_PASSWORD'] };
    expect(await h.cp('SecretGetOrCreate', named)).toMatchObject({ code: Code.NOT_FOUND, message: "Secret 'sim-creds' not found" });
    sim.addSecret('sim-creds', { REGISTRY_USERNAME: 'berth' });
    const partial = await h.cp('SecretGetOrCreate', named);
    expect(partial.code).toBe(Code.FAILED_PRECONDITION);
    expect(partial.message).toContain('REGISTRY_PASSWORD');
    sim.addSecret('sim-creds', CREDS);
    expect(String((await h.ok('SecretGetOrCreate', named)).secret_id)).toMatch(/^st-/);
    const ephemeral = await h.ok('SecretGetOrCreate', { object_creation_type: 'OBJECT_CREATION_TYPE_EPHEMERAL', env_dict: CREDS, app_id: appId });
    expect(ephemeral.secret_id).toMatch(/^st-/);
  });
});

describe('images', () => {
  const ephemeral = async (env: Record<string, string>) =>
    String((await h.ok('SecretGetOrCreate', { object_creation_type: 'OBJECT_CREATION_TYPE_EPHEMERAL', env_dict: env })).secret_id);

  it("a private image without credentials fails with the registry's words", async () => {
    const { imageId, result } = await h.build(appId, [`FROM ${PRIVATE}:latest`], { registry_auth_type: 'REGISTRY_AUTH_TYPE_PUBLIC' });
    expect(result.status).toBe('GENERIC_STATUS_FAILURE');
    expect(result.exception).toMatch(new RegExp(`^Image build for ${imageId} failed with the exception:\\n`));
    expect(result.exception).toMatch(/pull access denied .*unauthorized: authentication required/);
  });

  it('a STATIC_CREDS secret without the registry keys is refused at ImageGetOrCreate', async () => {
    const secretId = await ephemeral({ OTHER: 'x' });
    const r = await h.cp('ImageGetOrCreate', {
      app_id: appId,
      image: { dockerfile_commands: [`FROM ${PRIVATE}:latest`], image_registry_config: { registry_auth_type: STATIC, secret_id: secretId } },
    });
    expect(r.code).toBe(Code.FAILED_PRECONDITION);
    expect(r.message).toMatch(/REGISTRY_USERNAME, REGISTRY_PASSWORD/);
  });

  it('pulls with STATIC_CREDS; the same content is the same image, its result given at once', async () => {
    const registry = { registry_auth_type: STATIC, secret_id: await ephemeral(CREDS) };
    const first = await h.build(appId, [`FROM ${PRIVATE}:latest`], registry);
    expect(first.result).toEqual({ status: 'GENERIC_STATUS_SUCCESS' });
    expect(first.entries.map((e) => (e.task_logs as Array<{ data: string }>)[0]?.data).join('')).toContain(`Pulling ${PRIVATE}:latest`);
    const again = await h.ok('ImageGetOrCreate', {
      app_id: appId,
      image: { dockerfile_commands: [`FROM ${PRIVATE}:latest`], image_registry_config: registry },
    });
    expect(again).toEqual({ image_id: first.imageId, result: { status: 'GENERIC_STATUS_SUCCESS' } });
    const joined = await h.cp('ImageJoinStreaming', { image_id: first.imageId, timeout: 5 });
    expect(joined.messages).toHaveLength(1);
    expect(joined.messages[0]).toMatchObject({ result: { status: 'GENERIC_STATUS_SUCCESS' } });
  });

  it('a missing tag fails as manifest unknown', async () => {
    const registry = { registry_auth_type: STATIC, secret_id: await ephemeral(CREDS) };
    const { result } = await h.build(appId, [`FROM ${PRIVATE}:no-such-tag`], registry);
    expect(result).toMatchObject({ status: 'GENERIC_STATUS_FAILURE', exception: expect.stringMatching(/manifest unknown/) });
  });

  it('refuses registries beyond loopback and a context mount it does not have, without trying', async () => {
    const remote = await h.build(appId, ['FROM ghcr.io/acme/task:1']);
    expect(remote.result.exception).toMatch(/unsupported in the simulator/);
    const unmounted = await h.cp('ImageGetOrCreate', {
      app_id: appId,
      image: { dockerfile_commands: [`FROM ${BUSYBOX}`, 'COPY . /app'], context_mount_id: 'mo-none' },
    });
    expect(unmounted.code).toBe(Code.NOT_FOUND);
  });

  it('RUN, ENV and WORKDIR build for real; logs resume after last_entry_id without repeats', async () => {
    const commands = [`FROM ${BUSYBOX}`, 'ENV GREETING=hi', 'WORKDIR /work', 'RUN echo building; sleep 1.5; echo "$GREETING from $(pwd)" > greeting'];
    const imageId = await h.imageId(appId, commands);
    const first = await h.cp('ImageJoinStreaming', { image_id: imageId, timeout: 0.3 });
    expect(first.code).toBe(Code.OK);
    expect(first.messages.some((m) => m.result)).toBe(false); // still building: the stream ended without one
    const rest = await h.join(imageId, 0.3);
    expect(rest.result).toEqual({ status: 'GENERIC_STATUS_SUCCESS' });
    expect(rest.calls).toBeGreaterThan(1);
    const ids = rest.entries.map((e) => Number(e.entry_id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(ids.length);
    expect(rest.entries.map((e) => (e.task_logs as Array<{ data: string }>)[0]?.data).join('')).toContain('building');
    const sandbox = await h.sandbox(appId, imageId);
    const taskId = await h.taskId(sandbox);
    const jwt = await h.jwt(taskId);
    const execId = await h.exec(taskId, jwt, ['cat', 'greeting']);
    expect(await h.waitExec(taskId, jwt, execId)).toEqual({ code: 0 });
    expect((await h.read(taskId, jwt, execId)).data.toString()).toBe('hi from /work\n');
    await h.ok('SandboxTerminate', { sandbox_id: sandbox });
  });
});

describe('sandboxes', () => {
  it('a sandbox is a container with the labels, tags, network and limits asked for; a retried create makes no second one', async () => {
    const key = 'sim-create-1';
    const request = { resources: { milli_cpu: 500, memory_mb: 64 }, network_access: { network_access_type: 'BLOCKED' }, workdir: '/tmp' };
    const tags = { tags: [{ tag_name: 'berth.task', tag_value: 'sim-1' }] };
    const id = await h.sandbox(appId, busyboxImage, request, tags, { 'x-idempotency-key': key });
    expect(id).toMatch(/^sb-\w{22}$/);
    expect(await h.sandbox(appId, busyboxImage, request, tags, { 'x-idempotency-key': key })).toBe(id);
    const other = await h.cp('SandboxCreate', { app_id: appId, definition: { image_id: busyboxImage } }, { 'x-idempotency-key': key });
    expect(other.code).toBe(Code.INVALID_ARGUMENT);
    expect(sim.calls.filter((c) => c.idempotencyKey === key).map((c) => c.code)).toEqual([0, 0, Code.INVALID_ARGUMENT]);
    const taskId = await h.taskId(id);
    expect(taskId).toMatch(/^ta-/);
    const containers = await simContainers(id);
    expect(containers).toHaveLength(1);
    const info = await docker.getContainer(containers[0]?.Id ?? '').inspect();
    expect(info.Config.Labels).toMatchObject({
      'berth.managed': 'true',
      'berth.session': process.env.BERTH_SESSION ?? 'sim',
      'berth.owner-pid': String(process.pid),
      'modal.tag.berth.task': 'sim-1',
    });
    expect(info.HostConfig).toMatchObject({ NetworkMode: 'none', Memory: 64 * 1024 * 1024, NanoCpus: 500_000_000 });
    expect(info.Config).toMatchObject({ WorkingDir: '/tmp', Entrypoint: ['sh'], Cmd: ['-c', 'sleep 600'] });
    expect(await sim.sandboxes()).toContain(id);

    const list = async (filter: object) =>
      ((await h.ok('SandboxList', { app_id: appId, ...filter })).sandboxes as Array<{ id: string }> | undefined)?.map((s) => s.id) ?? [];
    expect(await list({ tags: [{ tag_name: 'berth.task', tag_value: 'sim-1' }] })).toEqual([id]);
    expect(await list({ tags: [{ tag_name: 'berth.task', tag_value: 'other' }] })).toEqual([]);
    expect(await h.ok('SandboxWait', { sandbox_id: id, timeout: 0 })).toEqual({});
    expect(await h.ok('SandboxTerminate', { sandbox_id: id })).toEqual({});
    expect(await simContainers(id)).toHaveLength(0);
    expect(await h.ok('SandboxTerminate', { sandbox_id: id })).toEqual({
      existing_result: { status: 'GENERIC_STATUS_TERMINATED', exception: 'Sandbox was terminated' },
    });
    expect(await h.ok('SandboxGetTaskId', { sandbox_id: id })).toEqual({
      task_result: { status: 'GENERIC_STATUS_TERMINATED', exception: 'Sandbox was terminated' },
    });
    expect(await list({ tags: [{ tag_name: 'berth.task', tag_value: 'sim-1' }] })).toEqual([]);
    expect(await list({ include_finished: true, tags: [{ tag_name: 'berth.task', tag_value: 'sim-1' }] })).toEqual([id]);
    expect(await sim.sandboxes()).not.toContain(id);
    expect(await h.cp('SandboxWait', { sandbox_id: 'sb-nope', timeout: 1 })).toMatchObject({ code: Code.NOT_FOUND, message: 'Sandbox sb-nope not found' });
  });

  it('ends with the entrypoint: SUCCESS on 0, FAILURE with the exit code otherwise', async () => {
    const ok = await h.sandbox(appId, busyboxImage, { entrypoint_args: ['sh', '-c', 'sleep 0.3'] });
    expect(await h.result(ok)).toEqual({ status: 'GENERIC_STATUS_SUCCESS' });
    const bad = await h.sandbox(appId, busyboxImage, { entrypoint_args: ['sh', '-c', 'exit 7'] });
    expect(await h.result(bad)).toEqual({ status: 'GENERIC_STATUS_FAILURE', exitcode: 7 });
    expect(await simContainers(bad)).toHaveLength(0);
  });

  it('OPEN network access is the default bridge (the sandbox sends nothing)', async () => {
    const { sandboxId } = await running({ network_access: { network_access_type: 'OPEN' } });
    const info = await docker.getContainer((await simContainers(sandboxId))[0]?.Id ?? '').inspect();
    expect(info.HostConfig.NetworkMode).toMatch(/^(bridge|default)$/);
    await h.ok('SandboxTerminate', { sandbox_id: sandboxId });
  });

  it('enforces timeout_secs: the sandbox ends with TIMEOUT', async () => {
    const { sandboxId, taskId, jwt } = await running({ timeout_secs: 1 });
    expect(await h.result(sandboxId)).toMatchObject({ status: 'GENERIC_STATUS_TIMEOUT' });
    const r = await h.router('TaskExecPoll', { task_id: taskId, exec_id: 'x' }, jwt);
    expect(r).toMatchObject({ code: Code.NOT_FOUND, message: expect.stringMatching(/The Sandbox is unavailable/) });
  });

  it('enforces idle_timeout_secs while no command runs and the router is not used', async () => {
    const { sandboxId } = await running({ idle_timeout_secs: 1 });
    expect(await h.result(sandboxId)).toMatchObject({ status: 'GENERIC_STATUS_IDLE_TIMEOUT' });
  });

  it('a container killed under it ends the sandbox with FAILURE 137, or INTERNAL_FAILURE when told so', async () => {
    const killed = await running();
    await docker.getContainer((await simContainers(killed.sandboxId))[0]?.Id ?? '').kill();
    expect(await h.result(killed.sandboxId)).toEqual({ status: 'GENERIC_STATUS_FAILURE', exitcode: 137 });
    sim.faults.reportKillsAs('INTERNAL_FAILURE');
    const internal = await running();
    await docker.getContainer((await simContainers(internal.sandboxId))[0]?.Id ?? '').kill();
    expect(await h.result(internal.sandboxId)).toMatchObject({ status: 'GENERIC_STATUS_INTERNAL_FAILURE' });
    sim.faults.reportKillsAs('FAILURE');
  });
});

describe('exec through the router', () => {
  it('echo: stdout from offset 0 and from 3, stderr, exit code; a repeated start is idempotent, another under the same id is not', async () => {
    const { taskId, jwt } = await running();
    const access = await h.ok('TaskGetCommandRouterAccess', { task_id: taskId });
    expect(access.url).toBe(sim.url);
    expect(String(access.jwt).split('.')).toHaveLength(3);
    const start = {
      task_id: taskId,
      exec_id: 'e-echo',
      command_args: ['sh', '-c', 'echo hello; echo oops >&2'],
      stdout_config: 'TASK_EXEC_STDOUT_CONFIG_PIPE',
      stderr_config: 'TASK_EXEC_STDERR_CONFIG_PIPE',
    };
    await h.routerOk('TaskExecStart', start, jwt);
    expect(await h.waitExec(taskId, jwt, 'e-echo')).toEqual({ code: 0 });
    expect((await h.read(taskId, jwt, 'e-echo', 0)).data.toString()).toBe('hello\n');
    expect((await h.read(taskId, jwt, 'e-echo', 3)).data.toString()).toBe('lo\n');
    expect((await h.read(taskId, jwt, 'e-echo', 0, 'STDERR')).data.toString()).toBe('oops\n');
    expect(await h.routerOk('TaskExecStart', start, jwt)).toEqual({});
    expect((await h.router('TaskExecStart', { ...start, command_args: ['true'] }, jwt)).code).toBe(Code.ALREADY_EXISTS);
    expect(await h.routerOk('TaskExecPoll', { task_id: taskId, exec_id: 'e-echo' }, jwt)).toEqual({ code: 0 });
  });

  it('stdin in offset order: a retried write adds only the new bytes, a gap is OUT_OF_RANGE, eof closes it', async () => {
    const { taskId, jwt } = await running();
    const execId = await h.exec(taskId, jwt, ['cat']);
    const write = (offset: number, data: string, eof = false) =>
      h.router('TaskExecStdinWrite', { task_id: taskId, exec_id: execId, offset, data: Buffer.from(data), eof }, jwt);
    expect((await write(0, 'hel')).code).toBe(0);
    expect((await write(0, 'hello\n')).code).toBe(0);
    expect((await write(10, 'x')).code).toBe(Code.OUT_OF_RANGE);
    expect(await h.routerOk('TaskExecPoll', { task_id: taskId, exec_id: execId }, jwt)).toEqual({});
    expect((await write(6, '', true)).code).toBe(0);
    expect(await h.waitExec(taskId, jwt, execId)).toEqual({ code: 0 });
    expect((await h.read(taskId, jwt, execId)).data.toString()).toBe('hello\n');
  });

  it('exit codes and signals; timeout_secs kills with signal 9; an unfinished TaskExecWait is DEADLINE_EXCEEDED after the long poll', async () => {
    const { taskId, jwt } = await running();
    const three = await h.exec(taskId, jwt, ['sh', '-c', 'exit 3']);
    expect(await h.waitExec(taskId, jwt, three)).toEqual({ code: 3 });
    const killed = await h.exec(taskId, jwt, ['sh', '-c', 'kill -9 $$']);
    expect(await h.waitExec(taskId, jwt, killed)).toEqual({ signal: 9 });
    const slow = await h.exec(taskId, jwt, ['sh', '-c', 'sleep 30; echo never'], { timeout_secs: 1 });
    const started = Date.now();
    expect(await h.waitExec(taskId, jwt, slow)).toEqual({ signal: 9 });
    expect(Date.now() - started).toBeLessThan(5000);
    expect((await h.read(taskId, jwt, slow)).data.toString()).toBe('');
    const long = await h.exec(taskId, jwt, ['sleep', '30']);
    const wait = await h.router('TaskExecWait', { task_id: taskId, exec_id: long }, jwt);
    expect(wait.code).toBe(Code.DEADLINE_EXCEEDED);
    expect(wait.ms).toBeGreaterThanOrEqual(1900);
  });

  it("pty_info as Modal's SDKs send it: a real terminal of that size, TERM from env_term, everything on stdout, typed input", async () => {
    const { taskId, jwt } = await running();
    // Go and JS: defaultSandboxPTYInfo(); Python: get_pty_info(shell=True, no_terminate_on_idle_stdin=True).
    const sdkPty = {
      enabled: true,
      winsz_rows: 24,
      winsz_cols: 80,
      env_term: 'xterm-256color',
      env_colorterm: 'truecolor',
      pty_type: 'PTY_TYPE_SHELL',
      no_terminate_on_idle_stdin: true,
    };
    const script = 'test -t 0 && test -t 1 && echo on-a-tty; echo to-err >&2; echo "$TERM $COLORTERM"; sleep 0.3; stty size';
    const tty = await h.exec(taskId, jwt, ['sh', '-c', script], { pty_info: sdkPty });
    expect(await h.waitExec(taskId, jwt, tty)).toEqual({ code: 0 });
    // The terminal's line endings, stderr merged (the size may come a moment after the start).
    expect((await h.read(taskId, jwt, tty)).data.toString()).toBe('on-a-tty\r\nto-err\r\nxterm-256color truecolor\r\n24 80\r\n');
    expect((await h.read(taskId, jwt, tty, 0, 'STDERR')).data.toString()).toBe('');
    // Another size; the request's own TERM wins over env_term; a typed line is read and echoed.
    const sized = await h.exec(taskId, jwt, ['sh', '-c', 'sleep 0.3; stty size; echo "$TERM"; read line; echo "got $line"'], {
      pty_info: { ...sdkPty, winsz_rows: 33, winsz_cols: 101 },
      env: { TERM: 'vt100' },
    });
    expect((await h.router('TaskExecStdinWrite', { task_id: taskId, exec_id: sized, offset: 0, data: Buffer.from('typed\r') }, jwt)).code).toBe(0);
    expect(await h.waitExec(taskId, jwt, sized)).toEqual({ code: 0 });
    // The terminal echoes what is typed, whenever it comes; the rest in order.
    const out = (await h.read(taskId, jwt, sized)).data.toString();
    expect(out.replace('typed\r\n', '')).toBe('33 101\r\nvt100\r\ngot typed\r\n');
    // Without pty_info: no terminal.
    const plain = await h.exec(taskId, jwt, ['sh', '-c', 'test -t 1 || echo no-tty']);
    expect(await h.waitExec(taskId, jwt, plain)).toEqual({ code: 0 });
    expect((await h.read(taskId, jwt, plain)).data.toString()).toBe('no-tty\n');
  });

  it('streams output while the process runs, in chunks of at most 1 MiB', async () => {
    const { taskId, jwt } = await running();
    const execId = await h.exec(taskId, jwt, ['sh', '-c', 'head -c 3000000 /dev/zero; sleep 0.5; echo end']);
    const r = await h.read(taskId, jwt, execId);
    expect(r.code).toBe(0);
    expect(r.data.length).toBe(3_000_004);
    expect(Math.max(...r.messages.map((m) => (m.data as Uint8Array).length))).toBeLessThanOrEqual(1024 * 1024);
  });
});

describe('faults', () => {
  it('vanish: the container goes and the sandbox is NOT_FOUND everywhere, even for a call already waiting', async () => {
    const { sandboxId, taskId, jwt } = await running();
    const parked = sim.waitingOn(sandboxId);
    const waiting = h.cp('SandboxWait', { sandbox_id: sandboxId, timeout: 10 });
    // Vanished once the call is parked in the simulator, waiting on the sandbox (not on its way).
    await until(() => sim.waitingOn(sandboxId) > parked, 5_000, 'the SandboxWait to be parked');
    await sim.faults.vanish(sandboxId);
    expect(await waiting).toMatchObject({ code: Code.NOT_FOUND, message: `Sandbox ${sandboxId} not found` });
    expect(await simContainers(sandboxId)).toHaveLength(0);
    for (const rpc of ['SandboxGetTaskId', 'SandboxWait', 'SandboxTerminate']) expect((await h.cp(rpc, { sandbox_id: sandboxId })).code).toBe(Code.NOT_FOUND);
    expect((await h.router('TaskExecPoll', { task_id: taskId, exec_id: 'x' }, jwt)).code).toBe(Code.NOT_FOUND);
    expect((await h.cp('TaskGetCommandRouterAccess', { task_id: taskId })).code).toBe(Code.NOT_FOUND);
    // An empty list has no field at all on the wire (this test run alone lists nothing).
    const listed = ((await h.ok('SandboxList', { app_id: appId, include_finished: true })).sandboxes ?? []) as Array<{ id: string }>;
    expect(listed.map((s) => s.id)).not.toContain(sandboxId);
  });

  it('fetchSpecFailure: the next sandbox ends at once with INIT_FAILURE, reported by SandboxGetTaskId and SandboxWait', async () => {
    sim.faults.fetchSpecFailure(1);
    const failed = await h.sandbox(appId, busyboxImage);
    const expected = { status: 'GENERIC_STATUS_INIT_FAILURE', exception: 'FetchSpec failed: loading container: file does not exist' };
    expect(await h.ok('SandboxGetTaskId', { sandbox_id: failed, timeout: 5 })).toEqual({ task_result: expected });
    expect(await h.ok('SandboxWait', { sandbox_id: failed, timeout: 5 })).toEqual({ result: expected });
    expect(await simContainers(failed)).toHaveLength(0);
    const next = await h.sandbox(appId, busyboxImage);
    expect((await h.task(next)).task_id).toMatch(/^ta-/);
    await h.ok('SandboxTerminate', { sandbox_id: next });
  });

  it('rateLimit: RESOURCE_EXHAUSTED with an RPCRetryPolicy in grpc-status-details-bin; retries with the key then create one sandbox', async () => {
    sim.faults.rateLimit({ count: 2, retryAfterSecs: 1.5 });
    const key = { 'x-idempotency-key': 'sim-rate-limited' };
    const create = () => h.cp('SandboxCreate', { app_id: appId, definition: { image_id: busyboxImage, entrypoint_args: ['sleep', '60'] } }, key);
    for (let i = 0; i < 2; i++) {
      const r = await create();
      expect(r).toMatchObject({ code: Code.RESOURCE_EXHAUSTED, message: 'Sandbox creation rate limit exceeded' });
      const status = sim.codec.decode('modal.client.RPCStatus', r.details ?? Buffer.alloc(0)) as {
        code: number;
        details: Array<{ type_url: string; value: Uint8Array }>;
      };
      expect(status).toMatchObject({ code: Code.RESOURCE_EXHAUSTED, details: [{ type_url: 'type.googleapis.com/modal.client.RPCRetryPolicy' }] });
      expect(sim.codec.decode('modal.client.RPCRetryPolicy', status.details[0]?.value ?? new Uint8Array())).toEqual({ retry_after_secs: 1.5 });
    }
    const made = await create();
    expect(made.code).toBe(0);
    expect((await create()).messages[0]?.sandbox_id).toBe(made.messages[0]?.sandbox_id);
    const id = String(made.messages[0]?.sandbox_id);
    await h.taskId(id);
    expect(await simContainers(id)).toHaveLength(1);
    await h.ok('SandboxTerminate', { sandbox_id: id });
  });

  it('cutStdioAfter: the next stdio stream is reset after that many bytes; reading on from there gets the rest', async () => {
    const { taskId, jwt } = await running();
    const execId = await h.exec(taskId, jwt, ['seq', '1', '3000']);
    await h.waitExec(taskId, jwt, execId);
    const whole = (await h.read(taskId, jwt, execId)).data;
    sim.faults.cutStdioAfter(1000);
    const cut = await h.read(taskId, jwt, execId);
    expect(cut).toMatchObject({ code: -1, rstCode: 2 });
    expect(cut.data.length).toBe(1000);
    const rest = await h.read(taskId, jwt, execId, cut.data.length);
    expect(Buffer.concat([cut.data, rest.data])).toEqual(whole);
    expect(sim.calls.filter((c) => c.path.endsWith('/TaskExecStdioRead') && c.reset)).toHaveLength(1);
  });

  it('expireRouterJwts: tokens issued so far are refused; a new one works', async () => {
    const { taskId, jwt } = await running();
    const poll = (token: string) => h.router('TaskExecPoll', { task_id: taskId, exec_id: 'none' }, token);
    expect((await poll(jwt)).code).toBe(Code.NOT_FOUND); // authenticated; there is no such exec
    sim.faults.expireRouterJwts();
    expect((await poll(jwt)).code).toBe(Code.UNAUTHENTICATED);
    expect((await poll(await h.jwt(taskId))).code).toBe(Code.NOT_FOUND);
  });

  it('slowLongPoll: long polls answer only after the delay', async () => {
    const { sandboxId } = await running();
    sim.faults.slowLongPoll(800);
    const slow = await h.cp('SandboxWait', { sandbox_id: sandboxId, timeout: 0 });
    sim.faults.slowLongPoll(0);
    const fast = await h.cp('SandboxWait', { sandbox_id: sandboxId, timeout: 0 });
    expect(slow.ms).toBeGreaterThanOrEqual(790);
    expect(fast.ms).toBeLessThan(500);
  });

  it("resetConnections: 'rst' resets calls in flight; 'goaway' lets them finish and sends new ones to a new connection", async () => {
    const { sandboxId, taskId, jwt } = await running();
    const execId = await h.exec(taskId, jwt, ['sleep', '30']);
    const inFlight = h.router('TaskExecWait', { task_id: taskId, exec_id: execId }, jwt);
    await new Promise((r) => setTimeout(r, 300));
    sim.faults.resetConnections('rst');
    expect(await inFlight).toMatchObject({ code: -1, rstCode: 2 });

    const waiting = h.cp('SandboxWait', { sandbox_id: sandboxId, timeout: 1 });
    await new Promise((r) => setTimeout(r, 300));
    sim.faults.resetConnections('goaway');
    expect(await waiting).toMatchObject({ code: 0, messages: [{}] });
    expect(h.client.goaways).toBe(1);
    expect((await h.cp('SandboxWait', { sandbox_id: sandboxId, timeout: 0 })).code).toBe(0);
  });

  it('evict: the container is killed and the sandbox ends with MEMORY_MANAGER_EVICTION', async () => {
    const { sandboxId, taskId, jwt } = await running();
    await sim.faults.evict(sandboxId);
    expect(await simContainers(sandboxId)).toHaveLength(0);
    expect(await h.result(sandboxId)).toMatchObject({ status: 'GENERIC_STATUS_MEMORY_MANAGER_EVICTION' });
    expect((await h.router('TaskExecPoll', { task_id: taskId, exec_id: 'x' }, jwt)).message).toMatch(/The Sandbox is unavailable/);
  });

  it('failNext: the next N calls to an RPC get the status given, then calls work again', async () => {
    sim.faults.failNext('AppGetOrCreate', Code.UNAVAILABLE, 'try again ✗', 2);
    sim.faults.failNext('/modal.client.ModalClient/SandboxList', Code.INTERNAL, 'boom');
    const get = () => h.cp('AppGetOrCreate', { app_name: 'berth-sim-test', object_creation_type: 'OBJECT_CREATION_TYPE_CREATE_IF_MISSING' });
    expect(await get()).toMatchObject({ code: Code.UNAVAILABLE, message: 'try again ✗', trailersOnly: true });
    expect((await get()).code).toBe(Code.UNAVAILABLE);
    expect(await get()).toMatchObject({ code: 0, messages: [{ app_id: appId }] });
    expect((await h.cp('SandboxList', { app_id: appId })).code).toBe(Code.INTERNAL);
    expect((await h.cp('SandboxList', { app_id: appId })).code).toBe(0);
  });
});

describe('a separate router origin', () => {
  it('TaskGetCommandRouterAccess points at it, and the control plane does not serve the router', async () => {
    const other = await ModalSimulator.start({ separateRouter: true });
    const o = new Harness(other);
    try {
      expect(other.routerUrl).not.toBe(other.url);
      const app = await o.app();
      const { imageId } = await o.build(app, [`FROM ${BUSYBOX}`]);
      const taskId = await o.taskId(await o.sandbox(app, imageId));
      const access = await o.ok('TaskGetCommandRouterAccess', { task_id: taskId });
      expect(access.url).toBe(other.routerUrl);
      const jwt = String(access.jwt);
      expect((await o.router('TaskExecPoll', { task_id: taskId, exec_id: 'x' }, jwt)).code).toBe(Code.UNIMPLEMENTED);
      const router = new RawClient(other.routerUrl, other.ca, other.codec);
      const execId = 'e-router';
      const start = { task_id: taskId, exec_id: execId, command_args: ['echo', 'via router'], stdout_config: 'TASK_EXEC_STDOUT_CONFIG_PIPE' };
      expect((await o.router('TaskExecStart', start, jwt, router)).code).toBe(0);
      const read = await o.router('TaskExecStdioRead', { task_id: taskId, exec_id: execId, offset: 0 }, jwt, router);
      expect(Buffer.from(read.messages[0]?.data as Uint8Array).toString()).toBe('via router\n');
      router.close();
    } finally {
      o.close();
      await other.close();
    }
  });
});

describe('sweeping', () => {
  it('a new simulator removes the containers and image tags of simulators whose process died', async () => {
    const child = spawn(process.execPath, ['-e', '0']);
    await once(child, 'exit');
    const dead = String(child.pid);
    const container = await docker.createContainer({
      Image: BUSYBOX,
      Cmd: ['true'],
      Labels: { 'berth.managed': 'true', 'berth.session': process.env.BERTH_SESSION ?? 'sim', 'berth.owner-pid': dead, [SIM_LABEL]: 'sb-orphan' },
      HostConfig: { NetworkMode: 'none' },
    });
    const tag = `p${dead}-im-orphan`;
    await docker.getImage(BUSYBOX).tag({ repo: IMAGE_REPO, tag });
    const next = await ModalSimulator.start();
    await next.close();
    await expect(container.inspect()).rejects.toMatchObject({ statusCode: 404 });
    await expect(docker.getImage(`${IMAGE_REPO}:${tag}`).inspect()).rejects.toMatchObject({ statusCode: 404 });
    expect(await docker.getImage(BUSYBOX).inspect()).toBeTruthy();
  });
});

describe('closing', () => {
  it('removes every container and image tag the simulator made', async () => {
    expect((await simContainers()).length).toBeGreaterThan(0);
    await sim.close();
    expect(await simContainers()).toEqual([]);
    await expect(docker.getImage(`${IMAGE_REPO}:${imageTag(busyboxImage)}`).inspect()).rejects.toMatchObject({ statusCode: 404 });
    expect(await docker.listImages({ filters: { reference: [`${IMAGE_REPO}:p${process.pid}-*`] } })).toEqual([]);
  });
});
