// The TaskCommandRouter service: exec start, stdio reads from any offset, offset-ordered stdin,
// wait and poll, the task's network policy (network.ts), and a V2 sandbox's own stdio
// (router-stdio.ts). Every call needs a router JWT for the task, and a sandbox that is still
// running (reading a V2 sandbox's output excepted).
import { constants } from 'node:http2';
import type { Msg } from './codec.js';
import { ExecProcess, type ExecRequest, type ExitStatus } from './exec.js';
import type { Faults } from './faults.js';
import { setNetworkAccess } from './network.js';
import { Code, RpcError, type CallContext } from './grpc-server.js';
import { type Handler, MethodTable } from './methods.js';
import { routerStdioMethods } from './router-stdio.js';
import type { RouterTokens } from './router-tokens.js';
import type { SandboxRecord, Sandboxes } from './sandboxes.js';
import type { Images } from './images.js';
import { resolveSecretSources, type SecretEnv } from './secret-sources.js';
import { engineMessage, sleep, statusCodeOf, waitFor } from './util.js';

/** The most bytes of command arguments an exec may have. */
export const ARG_LIMIT = 64 * 1024;

export const ROUTER = 'modal.task_command_router.TaskCommandRouter';
const PKG = 'modal.task_command_router';
/** A TaskExecStdioReadResponse carries at most this much. */
const MAX_CHUNK = 1024 * 1024;

export interface RouterDeps {
  sandboxes: Sandboxes;
  tokens: RouterTokens;
  faults: Faults;
  secretEnv: SecretEnv;
  longPollMs: () => number;
  images: Images;
}

export function routerMethods(deps: RouterDeps): MethodTable {
  const { sandboxes, faults } = deps;

  /** Authenticates, finds the running sandbox, and counts the call as activity (idle timeout). */
  const enter = (req: Msg, ctx: CallContext): SandboxRecord => {
    const taskId = String(req.task_id ?? '');
    deps.tokens.check(ctx.headers.authorization, taskId);
    const record = sandboxes.byTask(taskId);
    record.lastActivity = Date.now();
    return record;
  };
  const execOf = async (record: SandboxRecord, req: Msg): Promise<ExecProcess> => {
    const id = String(req.exec_id ?? '');
    const exec = record.execs.get(id);
    if (!exec) throw new RpcError(Code.NOT_FOUND, `Exec ${id} not found in task ${record.taskId}`);
    return exec;
  };
  /** Re-checked on every wake-up: the sandbox may end while a call waits. */
  const alive = (record: SandboxRecord) => {
    if (record.vanished || record.state !== 'running' || record.ending)
      throw new RpcError(Code.NOT_FOUND, 'The Sandbox is unavailable: it has finished or was removed');
  };
  const exitMsg = (exit: ExitStatus): Msg => ('code' in exit ? { code: exit.code } : { signal: exit.signal });

  const table = new MethodTable(ROUTER, PKG);
  const unary = (name: string, fn: Handler) => table.unary(name, fn);

  unary('TaskExecStart', async (req, ctx) => {
    const record = enter(req, ctx);
    const id = String(req.exec_id ?? '');
    if (!id) throw new RpcError(Code.INVALID_ARGUMENT, 'exec_id is required');
    const args = (req.command_args ?? []) as string[];
    if (args.length === 0) throw new RpcError(Code.INVALID_ARGUMENT, 'command_args is empty');
    // Modal caps the size of a command line; the simulator holds clients to the same bound.
    const size = args.reduce((n, a) => n + Buffer.byteLength(a) + 1, 0);
    if (size > ARG_LIMIT) throw new RpcError(Code.INVALID_ARGUMENT, `command arguments are too long (${size} bytes; the limit is ${ARG_LIMIT})`);
    const key = Buffer.from(ctx.raw).toString('hex');
    const existing = record.execs.get(id);
    if (existing) {
      // A retry of the same start is answered as the first was; another command under the id is not.
      const exec = await existing;
      if (exec.requestKey === key) return {};
      throw new RpcError(Code.ALREADY_EXISTS, `Exec ${id} already exists`);
    }
    const env = Object.entries((req.env ?? {}) as Record<string, string>).map(([k, v]) => `${k}=${v}`);
    for (const s of (req.secret_ids ?? []) as string[]) {
      const secret = deps.secretEnv(s);
      if (!secret) throw new RpcError(Code.NOT_FOUND, `Secret ${s} not found`);
      for (const [k, v] of Object.entries(secret)) env.push(`${k}=${v}`);
    }
    // Where Modal's Python SDK puts an exec's env and secrets.
    env.push(...resolveSecretSources(req.secret_sources, deps.secretEnv));
    const spec: ExecRequest = {
      argv: args,
      env,
      stdout: req.stdout_config === 'TASK_EXEC_STDOUT_CONFIG_PIPE' ? 'pipe' : 'devnull',
      stderr: req.stderr_config === 'TASK_EXEC_STDERR_CONFIG_PIPE' ? 'pipe' : req.stderr_config === 'TASK_EXEC_STDERR_CONFIG_STDOUT' ? 'stdout' : 'devnull',
      ...(typeof req.workdir === 'string' && req.workdir ? { workdir: req.workdir } : {}),
      ...ptyOf(req.pty_info as Msg | undefined, env),
    };
    const exec = new ExecProcess(id, key);
    const started = exec.start(record.container as NonNullable<SandboxRecord['container']>, spec).then(() => exec);
    record.execs.set(id, started);
    try {
      await started;
    } catch (error) {
      record.execs.delete(id);
      alive(record);
      // The container died and the simulator has not seen it yet.
      const status = statusCodeOf(error);
      if (status === 404 || status === 409) throw new RpcError(Code.NOT_FOUND, 'The Sandbox is unavailable: its container is not running');
      throw new RpcError(Code.FAILED_PRECONDITION, `could not start the command: ${engineMessage(error)}`);
    }
    record.procs.push(exec);
    const timeout = Number(req.timeout_secs ?? 0);
    if (timeout > 0) setTimeout(() => void exec.kill(), timeout * 1000).unref();
    return {};
  });

  table.stream('TaskExecStdioRead', async (req, ctx, send) => {
    const record = enter(req, ctx);
    const exec = await execOf(record, req);
    const descriptor = req.file_descriptor === 'TASK_EXEC_STDIO_FILE_DESCRIPTOR_STDERR' ? 'stderr' : 'stdout';
    const buffer = descriptor === 'stderr' ? exec.stderr : exec.stdout;
    let offset = Number(req.offset ?? 0);
    let budget = faults.takeStdioCut({ descriptor, offset });
    for (;;) {
      while (offset < buffer.length) {
        if (budget === 0) return resetAfterFlush(ctx);
        const chunk = buffer.read(offset, Math.min(MAX_CHUNK, budget ?? MAX_CHUNK));
        await send({ data: chunk });
        offset += chunk.length;
        if (budget !== undefined) budget -= chunk.length;
      }
      if (buffer.ended) break;
      await waitFor(() => (alive(record), offset < buffer.length || buffer.ended ? true : undefined), exec.changes, Infinity, ctx.signal);
    }
    // The output is shorter than the cut: the stream is still reset, not ended OK.
    if (budget !== undefined) return resetAfterFlush(ctx);
  });

  unary('TaskExecStdinWrite', async (req, ctx) => {
    const record = enter(req, ctx);
    const exec = await execOf(record, req);
    await exec.write(Number(req.offset ?? 0), (req.data ?? new Uint8Array()) as Uint8Array, Boolean(req.eof));
    return {};
  });

  unary('TaskExecWait', async (req, ctx) => {
    const record = enter(req, ctx);
    const exec = await execOf(record, req);
    if (faults.slowLongPollMs > 0) await sleep(faults.slowLongPollMs, ctx.signal);
    const until = Math.min(Date.now() + deps.longPollMs(), ctx.deadline);
    const exit = await waitFor(() => (alive(record), exec.exit), exec.changes, until, ctx.signal);
    // Still running: DEADLINE_EXCEEDED, what Modal's clients see from their own 60 s deadline and call again on.
    if (!exit) throw new RpcError(Code.DEADLINE_EXCEEDED, `exec ${exec.execId} is still running; call TaskExecWait again`);
    return exitMsg(exit);
  });

  unary('TaskExecPoll', async (req, ctx) => {
    const record = enter(req, ctx);
    const exec = await execOf(record, req);
    return exec.exit ? exitMsg(exec.exit) : {};
  });

  unary('TaskSnapshotFilesystem', async (req, ctx) => {
    const record = enter(req, ctx);
    alive(record);
    const snapshotId = String(req.snapshot_id ?? '');
    if (!snapshotId) throw new RpcError(Code.INVALID_ARGUMENT, 'snapshot_id is required');
    const image_id = await deps.images.snapshot(record.container as NonNullable<SandboxRecord['container']>, snapshotId);
    return { image_id };
  });

  unary('TaskSetNetworkAccess', async (req, ctx) => {
    const record = enter(req, ctx);
    await setNetworkAccess(
      sandboxes.deps.docker,
      record.container as NonNullable<SandboxRecord['container']>,
      record.network,
      req,
      sandboxes.deps.labels(record.id),
    );
    alive(record);
    return {};
  });

  routerStdioMethods(table, { sandboxes, tokens: deps.tokens });
  return table;
}

/** RST_STREAM once what was written has had a moment to leave (a reset drops unsent DATA). */
async function resetAfterFlush(ctx: CallContext): Promise<void> {
  await new Promise((r) => setTimeout(r, 50));
  if (!ctx.stream.closed) ctx.stream.close(constants.NGHTTP2_INTERNAL_ERROR);
}

/**
 * pty_info as a terminal: its size (Python's SDK sends 0 when its own stdout has none: the
 * terminal is then left unsized, as asked), and its terminal type in TERM (and COLORTERM,
 * TERM_PROGRAM) unless the request's env sets them. `enabled` is the deprecated switch the SDKs
 * still send; a pty_info without it (or with pty_type FUNCTION) still asks for a pty.
 */
function ptyOf(info: Msg | undefined, env: string[]): Pick<ExecRequest, 'pty'> {
  if (!info) return {};
  const set = (name: string, value: unknown) => {
    if (typeof value === 'string' && value && !env.some((e) => e.startsWith(`${name}=`))) env.push(`${name}=${value}`);
  };
  set('TERM', info.env_term);
  set('COLORTERM', info.env_colorterm);
  set('TERM_PROGRAM', info.env_term_program);
  return { pty: { rows: Number(info.winsz_rows ?? 0), cols: Number(info.winsz_cols ?? 0) } };
}
