// The task command router (modal.task_command_router.TaskCommandRouter): exec in one sandbox's
// task, on the worker that runs it. Its URL and JWT come from the control plane, per task; on
// UNAUTHENTICATED (an expired JWT) a fresh one is fetched and the call tried once more.
import { RpcCaller, type CallContext } from './calls.js';
import { GRPC_CODE, GrpcError } from './grpc-status.js';
import type { GrpcTransport } from './grpc.js';
import { LONG_POLL_SECS } from './modal-api.js';
import type { MessageValue } from './schema.js';
import { execStartRequest, type ExecStart } from './exec-start.js';

export type { ExecStart } from './exec-start.js';

export interface RouterAccess {
  jwt: string;
  url: string;
}

/** How a process ended: an exit code or a signal number. */
export type ExecExit = { code: number } | { signal: number };

/** A task's outbound network policy (modal.client.NetworkAccess). */
export type NetworkAccess = MessageValue<'NetworkAccess'>;

export class TaskRouter {
  readonly #rpc: RpcCaller;
  readonly #taskId: string;
  readonly #access: (fresh: boolean) => Promise<RouterAccess>;
  readonly #ca: string | Buffer | undefined;

  /** `access(fresh)` gives the router's URL and JWT: cached, or newly asked of the control plane. */
  constructor(transport: GrpcTransport, taskId: string, access: (fresh: boolean) => Promise<RouterAccess>, ca?: string | Buffer) {
    this.#rpc = new RpcCaller(transport, 'modal.task_command_router.TaskCommandRouter');
    this.#taskId = taskId;
    this.#access = access;
    this.#ca = ca;
  }

  async #ctx(fresh: boolean, signal?: AbortSignal, idleTimeoutMs?: number): Promise<CallContext> {
    const { jwt, url } = await this.#access(fresh);
    return {
      endpoint: { origin: new URL(url).origin, ...(this.#ca ? { ca: this.#ca } : {}) },
      metadata: async () => ({ authorization: `Bearer ${jwt}` }),
      ...(signal ? { signal } : {}),
      ...(idleTimeoutMs ? { idleTimeoutMs } : {}),
    };
  }

  /** A call with the cached JWT, and once more with a fresh one if the router says it expired. */
  async #authorized<T>(call: (ctx: CallContext) => Promise<T>, signal?: AbortSignal, idleTimeoutMs?: number): Promise<T> {
    try {
      return await call(await this.#ctx(false, signal, idleTimeoutMs));
    } catch (error) {
      if (!GrpcError.isInstance(error) || error.code !== GRPC_CODE.UNAUTHENTICATED) throw error;
      return call(await this.#ctx(true, signal, idleTimeoutMs));
    }
  }

  /** Start a process. The exec id is berth's, so a retried start that got through answers ALREADY_EXISTS. */
  async start(exec: ExecStart, signal?: AbortSignal): Promise<void> {
    const request = execStartRequest(this.#taskId, exec);
    try {
      await this.#authorized((ctx) => this.#rpc.unary('TaskExecStart', 'TaskExecStartRequest', request, 'TaskExecStartResponse', ctx), signal);
    } catch (error) {
      if (GrpcError.isInstance(error) && error.code === GRPC_CODE.ALREADY_EXISTS) return;
      throw error;
    }
  }

  /** Output of one stream from `offset` on, as it comes; ends when the process has ended and all was sent. */
  async *read(execId: string, fd: 'stdout' | 'stderr', offset: number, signal?: AbortSignal): AsyncGenerator<Uint8Array> {
    const request = {
      task_id: this.#taskId,
      exec_id: execId,
      offset,
      file_descriptor: fd === 'stdout' ? ('TASK_EXEC_STDIO_FILE_DESCRIPTOR_STDOUT' as const) : ('TASK_EXEC_STDIO_FILE_DESCRIPTOR_STDERR' as const),
    };
    let ctx = await this.#ctx(false, signal);
    let refreshed = false;
    for (;;) {
      try {
        for await (const res of this.#rpc.stream('TaskExecStdioRead', 'TaskExecStdioReadRequest', request, 'TaskExecStdioReadResponse', ctx)) {
          if (res.data?.length) {
            request.offset += res.data.length;
            yield res.data;
          }
        }
        return;
      } catch (error) {
        // An expired JWT before anything was read is asked again once; anything else is the caller's to resume.
        if (refreshed || !GrpcError.isInstance(error) || error.code !== GRPC_CODE.UNAUTHENTICATED) throw error;
        refreshed = true;
        ctx = await this.#ctx(true, signal);
      }
    }
  }

  /**
   * What the sandbox's main process (its entrypoint) wrote on stdout and stderr so far, as V2's
   * SandboxStdioReadV2 streams it (from offset 0, live): each stream read until it ends (the
   * sandbox ended) or `quietMs` passes with nothing new.
   */
  async entrypointOutput(quietMs: number, signal?: AbortSignal): Promise<string> {
    const ctx = await this.#ctx(false, signal);
    const one = async (fd: 'SANDBOX_STDIO_FILE_DESCRIPTOR_STDOUT' | 'SANDBOX_STDIO_FILE_DESCRIPTOR_STDERR') => {
      const chunks: Buffer[] = [];
      const quiet = new AbortController();
      let timer = setTimeout(() => quiet.abort(), quietMs);
      try {
        const request = { task_id: this.#taskId, offset: 0, file_descriptor: fd };
        for await (const res of this.#rpc.stream('SandboxStdioReadV2', 'SandboxStdioReadV2Request', request, 'SandboxStdioReadV2Response', {
          ...ctx,
          signal: signal ? AbortSignal.any([signal, quiet.signal]) : quiet.signal,
        })) {
          if (res.data?.length) chunks.push(Buffer.from(res.data));
          clearTimeout(timer);
          timer = setTimeout(() => quiet.abort(), quietMs);
        }
      } catch (error) {
        if (!quiet.signal.aborted) throw error;
      } finally {
        clearTimeout(timer);
      }
      return Buffer.concat(chunks).toString('utf8');
    };
    const [out, err] = await Promise.all([one('SANDBOX_STDIO_FILE_DESCRIPTOR_STDOUT'), one('SANDBOX_STDIO_FILE_DESCRIPTOR_STDERR')]);
    return `${out}${err}`;
  }

  /**
   * The task's filesystem as a new image (what Modal's SDK's snapshot_filesystem sends): its image
   * id. `ttlSeconds` -1: no expiry. The snapshot id is berth's, so a retried call is the same snapshot.
   */
  async snapshotFilesystem(snapshotId: string, ttlSeconds: number, signal?: AbortSignal): Promise<string> {
    const request = { task_id: this.#taskId, snapshot_id: snapshotId, ttl_seconds: ttlSeconds };
    const res = await this.#authorized(
      (ctx) => this.#rpc.unary('TaskSnapshotFilesystem', 'TaskSnapshotFilesystemRequest', request, 'TaskSnapshotFilesystemResponse', ctx),
      signal,
    );
    if (!res.image_id) throw new Error('TaskSnapshotFilesystem answered without an image id');
    return res.image_id;
  }

  /** Bytes of stdin at `offset`; a retried write is deduplicated by the router by its offset. */
  async write(execId: string, offset: number, data: Uint8Array, eof: boolean, signal?: AbortSignal): Promise<void> {
    const request = { task_id: this.#taskId, exec_id: execId, offset, data, eof };
    await this.#authorized((ctx) => this.#rpc.unary('TaskExecStdinWrite', 'TaskExecStdinWriteRequest', request, 'TaskExecStdinWriteResponse', ctx), signal);
  }

  /** How the process ended, long-polled; undefined if it still runs when the poll ends. */
  async wait(execId: string, signal?: AbortSignal): Promise<ExecExit | undefined> {
    const request = { task_id: this.#taskId, exec_id: execId };
    try {
      const res = await this.#authorized(
        (ctx) => this.#rpc.unary('TaskExecWait', 'TaskExecWaitRequest', request, 'TaskExecWaitResponse', ctx),
        signal,
        (LONG_POLL_SECS + 30) * 1000,
      );
      if (res.code !== undefined) return { code: res.code };
      if (res.signal !== undefined) return { signal: res.signal };
      return undefined;
    } catch (error) {
      // The router ends a long wait this way; the caller asks again.
      if (GrpcError.isInstance(error) && error.code === GRPC_CODE.DEADLINE_EXCEEDED) return undefined;
      throw error;
    }
  }

  /**
   * Replaces the task's outbound network policy (TaskSetNetworkAccess, as Modal's SDKs send it:
   * Go/JS `UpdateNetworkPolicy`, Python `_experimental_set_outbound_network_policy`). Setting the
   * same policy twice is harmless, so the call is retried like any unary call.
   */
  async setNetworkAccess(access: NetworkAccess, signal?: AbortSignal): Promise<void> {
    const request = { task_id: this.#taskId, network_access: access };
    await this.#authorized(
      (ctx) => this.#rpc.unary('TaskSetNetworkAccess', 'TaskSetNetworkAccessRequest', request, 'TaskSetNetworkAccessResponse', ctx),
      signal,
    );
  }

  /** How the process ended, at once; undefined while it runs. */
  async poll(execId: string, signal?: AbortSignal): Promise<ExecExit | undefined> {
    const res = await this.#authorized(
      (ctx) => this.#rpc.unary('TaskExecPoll', 'TaskExecPollRequest', { task_id: this.#taskId, exec_id: execId }, 'TaskExecPollResponse', ctx),
      signal,
    );
    if (res.code !== undefined) return { code: res.code };
    if (res.signal !== undefined) return { signal: res.signal };
    return undefined;
  }
}
