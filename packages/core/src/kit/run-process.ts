import { randomBytes } from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import { finished } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Readable } from 'node:stream';
import type { ExecOptions, ExecResult } from '../contract.js';
import { ConfigError, type Operation } from '../errors.js';
import { TailBuffer } from '../tail-buffer.js';
import { EXEC_MARKER, killProcessTree } from './process-tree.js';
import { stdinStream } from './stdin.js';
import type { SandboxTransport } from './transport.js';

export const DEFAULT_MAX_OUTPUT = 10 * 1024 * 1024;
/** After the tree killer, how long output may go on (a process hidden from it) before berth stops waiting. */
const AFTER_KILL_GRACE_MS = 5_000;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export interface ProcessOutcome {
  result: ExecResult;
  /** The process ended in a way that suggests the sandbox itself died: the caller checks. */
  suspicious: boolean;
  /** The caller's signal fired. */
  cancelled: boolean;
  /** The backend never reported an exit code. */
  exitUnknown: boolean;
}

interface Context {
  operation: Operation;
  backend: string;
  environmentId: string;
}

/** The argv an exec runs, after checking the caller's input: a ConfigError says what was wrong. */
export function execArgv(command: string | readonly string[], opts: ExecOptions, ctx: Context): readonly string[] {
  const argv = typeof command === 'string' ? ['/bin/sh', '-c', command] : command;
  if (argv.length === 0 || typeof argv[0] !== 'string' || argv[0].length === 0) {
    throw new ConfigError({ ...ctx, path: 'command', message: 'exec needs a non-empty command: a shell string or an argv array' });
  }
  if (opts.timeoutMs !== undefined && !(opts.timeoutMs > 0)) {
    throw new ConfigError({ ...ctx, path: 'opts.timeoutMs', message: `timeoutMs must be a positive number of milliseconds, got ${opts.timeoutMs}` });
  }
  for (const name of Object.keys(opts.env ?? {})) {
    if (!ENV_NAME.test(name)) {
      throw new ConfigError({ ...ctx, path: `opts.env.${name}`, message: `invalid environment variable name "${name}": names are [A-Za-z_][A-Za-z0-9_]*` });
    }
  }
  return argv;
}

function collect(stream: Readable, buffer: TailBuffer, callback: ((chunk: Uint8Array) => void) | undefined): Promise<void> {
  stream.on('data', (chunk: Buffer) => {
    buffer.push(chunk);
    callback?.(chunk);
  });
  return finished(stream);
}

/**
 * Run one command through the transport. Resolves with its result (non-zero exits and timeouts
 * are data); rejects only when the transport failed. A timeout or the caller's abort kills the
 * command's whole process tree inside the sandbox.
 */
export async function runProcess(transport: SandboxTransport, argv: readonly string[], opts: ExecOptions): Promise<ProcessOutcome> {
  const started = Date.now();
  const execId = randomBytes(8).toString('hex');
  const input = stdinStream(opts.stdin);
  const proc = await transport.spawn({
    argv,
    env: { ...opts.env, [EXEC_MARKER]: execId },
    ...(opts.cwd ? { cwd: opts.cwd } : {}),
    stdin: input !== undefined,
  });

  const max = opts.maxOutputBytes ?? DEFAULT_MAX_OUTPUT;
  const stdout = new TailBuffer(max);
  const stderr = new TailBuffer(max);
  const output = Promise.all([collect(proc.stdout, stdout, opts.onStdout), collect(proc.stderr, stderr, opts.onStderr)]);
  // A command that does not read its stdin, or exits before it is all written, is not a failure.
  if (input && proc.stdin) pipeline(input, proc.stdin).catch(() => undefined);

  const timeout = opts.timeoutMs === undefined ? undefined : AbortSignal.timeout(opts.timeoutMs);
  const stops = [opts.signal, timeout].filter((s): s is AbortSignal => s !== undefined);
  const stop = stops.length > 0 ? AbortSignal.any(stops) : undefined;
  const grace = new AbortController();
  let killing: Promise<void> | undefined;
  const kill = () => {
    killing ??= (async () => {
      await killProcessTree(transport, execId, (await proc.pid?.().catch(() => undefined)) ?? '');
      // Whatever the killer could not reach (a process hidden from it), berth does not wait on.
      sleep(AFTER_KILL_GRACE_MS, undefined, { signal: grace.signal }).then(() => proc.abandon(), () => undefined);
    })();
  };
  stop?.addEventListener('abort', kill, { once: true });
  // It may have fired while the process was being started: then no event will come.
  if (stop?.aborted) kill();

  let exit;
  try {
    [, exit] = await Promise.all([output, proc.exit]);
  } catch (error) {
    proc.abandon();
    throw error;
  } finally {
    stop?.removeEventListener('abort', kill);
    if (killing) await killing;
    grace.abort();
  }

  const cancelled = opts.signal?.aborted === true;
  const timedOut = !cancelled && timeout?.aborted === true;
  const stdoutBytes = stdout.bytes();
  const stderrBytes = stderr.bytes();
  const result: ExecResult = {
    // -1 only when the backend never said how the command ended.
    exitCode: exit.code ?? -1,
    stdout: stdoutBytes.toString('utf8'),
    stderr: stderrBytes.toString('utf8'),
    stdoutBytes,
    stderrBytes,
    timedOut,
    truncated: { stdout: stdout.truncated, stderr: stderr.truncated },
    durationMs: Date.now() - started,
  };
  if (timedOut) result.signal = 'SIGKILL';
  else if (exit.signal) result.signal = exit.signal;
  // Kept out of JSON: the strings already carry the output.
  Object.defineProperty(result, 'stdoutBytes', { enumerable: false });
  Object.defineProperty(result, 'stderrBytes', { enumerable: false });
  const suspicious = !timedOut && !cancelled && (exit.code === null || exit.code >= 128 || exit.interrupted === true);
  return { result, suspicious, cancelled, exitUnknown: exit.code === null };
}
