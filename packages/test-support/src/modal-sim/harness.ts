// Test-side helpers over RawClient: one call per Modal RPC, and the loops a client runs around
// long polls (image joins, task ids, sandbox and exec waits).
import { randomUUID } from 'node:crypto';
import type { Msg } from './codec.js';
import type { ModalSimulator } from './index.js';
import { RawClient, type CallResult } from './raw-client.js';

const CP = '/modal.client.ModalClient';
const ROUTER = '/modal.task_command_router.TaskCommandRouter';

/** V2 RPCs whose messages are V1's (or Empty): [request, response]. */
const V2_MESSAGES: Record<string, [string, string]> = {
  SandboxGetTaskIdV2: ['SandboxGetTaskIdRequest', 'SandboxGetTaskIdResponse'],
  SandboxWaitV2: ['SandboxWaitRequest', 'SandboxWaitResponse'],
  SandboxTerminateV2: ['SandboxTerminateRequest', 'SandboxTerminateResponse'],
  SandboxListV2: ['SandboxListRequest', 'SandboxListResponse'],
  SandboxTagsGetV2: ['SandboxTagsGetRequest', 'SandboxTagsGetResponse'],
  SandboxTagsSetV2: ['SandboxTagsSetRequest', 'google.protobuf.Empty'],
  SandboxTagsSet: ['SandboxTagsSetRequest', 'google.protobuf.Empty'],
  ClientHello: ['google.protobuf.Empty', 'ClientHelloResponse'],
};
const full = (name: string) => (name.includes('.') ? name : `modal.client.${name}`);

export class Harness {
  readonly client: RawClient;
  #authToken?: string;

  constructor(
    readonly sim: ModalSimulator,
    metadata?: Record<string, string>,
  ) {
    this.client = new RawClient(sim.url, sim.ca, sim.codec, metadata ?? { 'x-modal-token-id': sim.tokenId, 'x-modal-token-secret': sim.tokenSecret });
  }

  cp(rpc: string, msg: Msg | Uint8Array, headers: Record<string, string> = {}): Promise<CallResult> {
    const [request, response] = V2_MESSAGES[rpc] ?? [`${rpc}Request`, `${rpc}Response`];
    return this.client.call(`${CP}/${rpc}`, full(request), full(response), msg, headers);
  }

  /** An x-modal-auth-token from AuthTokenGet, fetched once. */
  async authToken(): Promise<string> {
    this.#authToken ??= String((await this.ok('AuthTokenGet', {})).token);
    return this.#authToken;
  }

  /** A V2 RPC, with the auth token it needs. */
  async v2(rpc: string, msg: Msg, headers: Record<string, string> = {}): Promise<CallResult> {
    return this.cp(rpc, msg, { 'x-modal-auth-token': await this.authToken(), ...headers });
  }

  async v2Ok(rpc: string, msg: Msg): Promise<Msg> {
    return only(await this.v2(rpc, msg), rpc);
  }

  /** SandboxCreateV2 on busybox-like images: `sleep 600` unless the definition says otherwise. */
  async sandboxV2(appId: string, imageId: string, definition: Msg = {}, extra: Msg = {}): Promise<string> {
    const def = { entrypoint_args: ['sh', '-c', 'sleep 600'], image_id: imageId, timeout_secs: 120, ...definition };
    return String((await this.v2Ok('SandboxCreateV2', { app_id: appId, definition: def, ...extra })).sandbox_id);
  }

  /** Loops SandboxWaitV2 (10 s long polls, as the SDK's wait) until the result. */
  async resultV2(sandboxId: string): Promise<Msg> {
    for (;;) {
      const r = await this.v2Ok('SandboxWaitV2', { sandbox_id: sandboxId, timeout: 10 });
      if (r.result) return r.result as Msg;
    }
  }

  /** Polls SandboxGetTaskIdV2 as the SDK does (it answers at once) until a task id comes. */
  async taskIdV2(sandboxId: string): Promise<Msg> {
    for (let i = 0; i < 600; i++) {
      const r = await this.v2Ok('SandboxGetTaskIdV2', { sandbox_id: sandboxId });
      if (r.task_id || r.task_result) return r;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`no task for ${sandboxId}`);
  }

  router(rpc: string, msg: Msg, jwt: string, origin?: RawClient): Promise<CallResult> {
    const pkg = 'modal.task_command_router';
    return (origin ?? this.client).call(`${ROUTER}/${rpc}`, `${pkg}.${rpc}Request`, `${pkg}.${rpc}Response`, msg, { authorization: `Bearer ${jwt}` });
  }

  async ok(rpc: string, msg: Msg, headers: Record<string, string> = {}): Promise<Msg> {
    return only(await this.cp(rpc, msg, headers), rpc);
  }

  async routerOk(rpc: string, msg: Msg, jwt: string): Promise<Msg> {
    return only(await this.router(rpc, msg, jwt), rpc);
  }

  async app(name = 'berth-sim-test'): Promise<string> {
    return String((await this.ok('AppGetOrCreate', { app_name: name, object_creation_type: 'OBJECT_CREATION_TYPE_CREATE_IF_MISSING' })).app_id);
  }

  async imageId(appId: string, commands: string[], registry?: Msg): Promise<string> {
    const image = { dockerfile_commands: commands, ...(registry ? { image_registry_config: registry } : {}) };
    return String((await this.ok('ImageGetOrCreate', { app_id: appId, image })).image_id);
  }

  /** Joins as a client does: again with last_entry_id until a result comes. */
  async join(imageId: string, timeout = 10): Promise<{ result: Msg; entries: Msg[]; calls: number }> {
    const entries: Msg[] = [];
    let last = '';
    for (let calls = 1; calls < 200; calls++) {
      const r = await this.cp('ImageJoinStreaming', { image_id: imageId, timeout, last_entry_id: last, include_logs_for_finished: true });
      if (r.code !== 0) throw new Error(`ImageJoinStreaming: ${r.code} ${r.message}`);
      for (const m of r.messages) {
        if (m.entry_id) last = String(m.entry_id);
        if (m.result) return { result: m.result as Msg, entries, calls };
        entries.push(m);
      }
    }
    throw new Error('no image result');
  }

  async build(appId: string, commands: string[], registry?: Msg): Promise<{ imageId: string; result: Msg; entries: Msg[]; calls: number }> {
    const imageId = await this.imageId(appId, commands, registry);
    return { imageId, ...(await this.join(imageId)) };
  }

  async sandbox(appId: string, imageId: string, definition: Msg = {}, extra: Msg = {}, headers: Record<string, string> = {}): Promise<string> {
    const def = { entrypoint_args: ['sh', '-c', 'sleep 600'], image_id: imageId, timeout_secs: 120, ...definition };
    return String((await this.ok('SandboxCreate', { app_id: appId, definition: def, ...extra }, headers)).sandbox_id);
  }

  /** Loops SandboxGetTaskId until it gives a task id or the task's result. */
  async task(sandboxId: string): Promise<Msg> {
    for (;;) {
      const r = await this.ok('SandboxGetTaskId', { sandbox_id: sandboxId, timeout: 10, wait_until_ready: true });
      if (r.task_id || r.task_result) return r;
    }
  }

  async taskId(sandboxId: string): Promise<string> {
    const r = await this.task(sandboxId);
    if (!r.task_id) throw new Error(`no task: ${JSON.stringify(r.task_result)}`);
    return String(r.task_id);
  }

  async result(sandboxId: string): Promise<Msg> {
    for (;;) {
      const r = await this.ok('SandboxWait', { sandbox_id: sandboxId, timeout: 10 });
      if (r.result) return r.result as Msg;
    }
  }

  async jwt(taskId: string): Promise<string> {
    return String((await this.ok('TaskGetCommandRouterAccess', { task_id: taskId })).jwt);
  }

  async exec(taskId: string, jwt: string, args: string[], extra: Msg = {}): Promise<string> {
    const execId = randomUUID();
    await this.routerOk(
      'TaskExecStart',
      {
        task_id: taskId,
        exec_id: execId,
        command_args: args,
        stdout_config: 'TASK_EXEC_STDOUT_CONFIG_PIPE',
        stderr_config: 'TASK_EXEC_STDERR_CONFIG_PIPE',
        ...extra,
      },
      jwt,
    );
    return execId;
  }

  async read(taskId: string, jwt: string, execId: string, offset = 0, fd: 'STDOUT' | 'STDERR' = 'STDOUT'): Promise<CallResult & { data: Buffer }> {
    const r = await this.router(
      'TaskExecStdioRead',
      { task_id: taskId, exec_id: execId, offset, file_descriptor: `TASK_EXEC_STDIO_FILE_DESCRIPTOR_${fd}` },
      jwt,
    );
    return { ...r, data: Buffer.concat(r.messages.map((m) => Buffer.from((m.data ?? new Uint8Array()) as Uint8Array))) };
  }

  /** TaskExecWait, called again on DEADLINE_EXCEEDED as a client would. */
  async waitExec(taskId: string, jwt: string, execId: string): Promise<Msg> {
    for (;;) {
      const r = await this.router('TaskExecWait', { task_id: taskId, exec_id: execId }, jwt);
      if (r.code === 4) continue;
      return only(r, 'TaskExecWait');
    }
  }

  close(): void {
    this.client.close();
  }
}

function only(r: CallResult, rpc: string): Msg {
  if (r.code !== 0) throw new Error(`${rpc} failed: ${r.code} ${r.message}`);
  return r.messages[0] ?? {};
}
