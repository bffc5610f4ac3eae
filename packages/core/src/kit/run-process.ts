import { randomBytes } from 'node:crypto';
import { finished } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Readable } from 'node:stream';
import type { ExecOptions, ExecResult } from '../contract.js';
import { cancelledFrom, raceAbort } from '../abort.js';
import { BackendUnavailableError, ConfigError, type Operation } from '../errors.js';
import { envSizeProblem } from '../spec.js';
import { TailBuffer } from '../tail-buffer.js';
import { EXEC_MARKER, KILL_TIMEOUT_MS, killProcessTree } from './process-tree.js';
import { isExecStdin, stdinStream } from './stdin.js';
import { gateOnTerminalSize, terminalSize } from './tty.js';
import type { ProcessExit, SandboxProcess, SandboxTransport } from './transport.js';
import { userFailure } from './user-launcher.js';

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

const USER = /^[A-Za-z0-9_][A-Za-z0-9_.-]*(:[A-Za-z0-9_][A-Za-z0-9_.-]*)?$/;

/**
 * The argv an exec runs, after checking the caller's input: a ConfigError says what was wrong.
 * One rule for empty commands: '' (or only blanks) and [''] are both refused.
 */
export function execArgv(
  command: string | readonly string[],
  opts: ExecOptions,
  ctx: Context,
  specEnv: Readonly<Record<string, string>> = {},
): readonly string[] {
  const refuse = (path: string, message: string) => new ConfigError({ ...ctx, path, message });
  if (typeof command === 'string' ? command.trim() === '' : !Array.isArray(command) || typeof command[0] !== 'string' || command[0] === '') {
    throw refuse('command', 'exec needs a non-empty command: a shell string or an argv array whose first element names the program');
  }
  if (Array.isArray(command) && command.some((arg) => typeof arg !== 'string')) throw refuse('command', 'every element of an argv array must be a string');
  if (opts.timeoutMs !== undefined && !(opts.timeoutMs > 0))
    throw refuse('opts.timeoutMs', `timeoutMs must be a positive number of milliseconds, got ${opts.timeoutMs}`);
  if (opts.stdin !== undefined && !isExecStdin(opts.stdin)) {
    throw refuse(
      'opts.stdin',
      `stdin must be a string, a Uint8Array, a Readable or an AsyncIterable of Uint8Array; got ${opts.stdin === null ? 'null' : typeof opts.stdin}`,
    );
  }
  if (opts.user !== undefined && (typeof opts.user !== 'string' || !USER.test(opts.user))) {
    throw refuse('opts.user', `user must be a user name or uid, optionally with a group (e.g. 'app', '1000', '1000:1000'); got ${JSON.stringify(opts.user)}`);
  }
  for (const [name, value] of Object.entries(opts.env ?? {})) {
    if (!ENV_NAME.test(name)) throw refuse(`opts.env.${name}`, `invalid environment variable name "${name}": names are [A-Za-z_][A-Za-z0-9_]*`);
    if (typeof value !== 'string') throw refuse(`opts.env.${name}`, `opts.env.${name} must be a string, got ${typeof value}`);
  }
  // The command's environment is the spec's and the exec's together: the kernel limits the sum.
  const size = envSizeProblem({ ...specEnv, ...opts.env }, 'opts.env');
  if (size) throw refuse(size.path, size.message);
  const tty = terminalSize(opts.tty, ctx);
  const argv = typeof command === 'string' ? ['/bin/sh', '-c', command] : command;
  // A shell string reports a missing command itself (127); an argv or a cwd goes through the
  // launcher, so every backend says the same, on stderr, whatever its runtime would have said.
  const launched = typeof command === 'string' && !opts.cwd ? argv : ['/bin/sh', '-c', LAUNCHER, 'berth-exec', opts.cwd ?? '', ...argv];
  return tty ? gateOnTerminalSize(launched, tty) : launched;
}

/**
 * Runs an exec's argv the same way on every backend: enter the cwd (exit 126 if it cannot), find
 * the program (exit 127 if it is not there), then exec it, so the PID, signals and exit status
 * are the command's own. Messages go to stderr, where a user looks for them.
 */
const LAUNCHER = [
  'if [ -n "$1" ]; then cd "$1" 2>/dev/null || { echo "berth: cannot run in $1: no such directory" >&2; exit 126; }; fi',
  'shift',
  'case $1 in',
  '  */*) [ -e "$1" ] || { echo "berth: $1: no such file" >&2; exit 127; } ;;',
  '  *) command -v "$1" >/dev/null 2>&1 || { echo "berth: $1: command not found" >&2; exit 127; } ;;',
  'esac',
  'exec "$@"',
].join('\n');

function collect(stream: Readable, buffer: TailBuffer, callback: ((chunk: Uint8Array) => void) | undefined): Promise<void> {
  stream.on('data', (chunk: Buffer) => {
    buffer.push(chunk);
    callback?.(chunk);
  });
  return finished(stream);
}

/** Why a run was stopped before its command ended by itself. */
type StopCause = 'timeout' | 'abort' | 'input';

/**
 * One command through the transport. Resolves with its result (non-zero exits and timeouts are
 * data); rejects only when the transport failed, the caller aborted, or the caller's stdin stream
 * failed. A timeout, an abort or a failed stdin kills the command's whole process tree.
 */
class ProcessRun {
  readonly #transport: SandboxTransport;
  readonly #opts: ExecOptions;
  readonly #ctx: Context;
  readonly #execId = randomBytes(8).toString('hex');
  readonly #input: Readable | undefined;
  readonly #stop = new AbortController();
  readonly #grace = new AbortController();
  #stopCause: StopCause | undefined;
  #inputError: unknown;
  #proc: SandboxProcess | undefined;
  #killing: Promise<void> | undefined;

  constructor(transport: SandboxTransport, opts: ExecOptions, ctx: Context) {
    this.#transport = transport;
    this.#opts = opts;
    this.#ctx = ctx;
    this.#input = stdinStream(opts.stdin);
    // The caller's stream may fail at any time, even before the process exists: never unhandled.
    this.#input?.on('error', (error) => {
      this.#inputError ??= error;
      this.#stopFor('input');
    });
  }

  #stopFor(cause: StopCause): void {
    this.#stopCause ??= cause;
    this.#stop.abort();
    if (this.#proc) this.#kill(this.#proc);
  }

  #kill(proc: SandboxProcess): void {
    this.#killing ??= (async () => {
      const pid = proc.pid ? await raceAbort(proc.pid(), AbortSignal.timeout(KILL_TIMEOUT_MS)).catch(() => undefined) : undefined;
      await killProcessTree(this.#transport, this.#execId, pid ?? '');
      // Whatever the killer could not reach (a process hidden from it), berth does not wait on.
      sleep(AFTER_KILL_GRACE_MS, undefined, { signal: this.#grace.signal }).then(
        () => proc.abandon(),
        () => undefined,
      );
    })();
  }

  async run(argv: readonly string[]): Promise<ProcessOutcome> {
    const started = Date.now();
    const opts = this.#opts;
    // A timer and a listener, both removed when the run ends, not AbortSignal.timeout/any (see
    // linkSignals); a callback, not a linked signal, because each stop must record its cause.
    const timer = opts.timeoutMs === undefined ? undefined : setTimeout(() => this.#stopFor('timeout'), opts.timeoutMs);
    const onAbort = () => this.#stopFor('abort');
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    if (opts.signal?.aborted) onAbort();
    const max = opts.maxOutputBytes ?? DEFAULT_MAX_OUTPUT;
    const stdout = new TailBuffer(max);
    const stderr = new TailBuffer(max);
    let exit: ProcessExit;
    try {
      const proc = await this.#spawn(argv);
      const output = Promise.all([collect(proc.stdout, stdout, opts.onStdout), collect(proc.stderr, stderr, opts.onStderr)]);
      if (this.#input && proc.stdin) {
        // A command that does not read its stdin, or exits before it is all written, is not a failure.
        proc.stdin.on('error', () => undefined);
        this.#input.pipe(proc.stdin);
      }
      if (this.#stopCause) this.#kill(proc);
      try {
        [, exit] = await Promise.all([output, proc.exit]);
      } catch (error) {
        proc.abandon();
        throw error;
      }
    } finally {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      if (this.#killing) await this.#killing;
      this.#grace.abort();
      this.#input?.unpipe();
      this.#input?.destroy();
    }
    if (this.#inputError !== undefined) throw this.#stdinFailed();

    const cancelled = this.#stopCause === 'abort';
    const timedOut = this.#stopCause === 'timeout';
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
    // The runtime (or berth's launcher) could not become the user: the caller's input, not the command's result.
    const notAsUser = opts.user === undefined ? undefined : userFailure(opts.user, result, this.#ctx);
    if (notAsUser) throw notAsUser;
    const suspicious = !timedOut && !cancelled && (exit.code === null || exit.code >= 128 || exit.interrupted === true);
    return { result, suspicious, cancelled, exitUnknown: exit.code === null };
  }

  /** A backend that never starts the process must not hold the caller past its timeout or abort. */
  async #spawn(argv: readonly string[]): Promise<SandboxProcess> {
    const tty = terminalSize(this.#opts.tty, this.#ctx);
    const spawning = this.#transport.spawn({
      argv,
      env: { ...this.#opts.env, [EXEC_MARKER]: this.#execId },
      stdin: this.#input !== undefined,
      // Without a native user, SandboxEnvironment wrapped the argv in the user launcher instead.
      ...(this.#opts.user !== undefined && this.#transport.nativeUser === true ? { user: this.#opts.user } : {}),
      ...(tty ? { tty } : {}),
    });
    try {
      this.#proc = await raceAbort(spawning, this.#stop.signal);
      return this.#proc;
    } catch (error) {
      if (!this.#stop.signal.aborted) throw error;
      // Given up on: if the process starts after all, it is killed and dropped.
      spawning.then(
        (late) => killProcessTree(this.#transport, this.#execId).finally(() => late.abandon()),
        () => undefined,
      );
      if (this.#stopCause === 'abort') throw cancelledFrom(this.#opts.signal!, this.#ctx);
      if (this.#stopCause === 'input') throw this.#stdinFailed();
      throw new BackendUnavailableError({
        ...this.#ctx,
        message: `the ${this.#ctx.backend} backend did not start the command within its timeout of ${this.#opts.timeoutMs} ms`,
        cause: error,
      });
    }
  }

  #stdinFailed(): ConfigError {
    const why = this.#inputError instanceof Error ? this.#inputError.message : String(this.#inputError);
    return new ConfigError({ ...this.#ctx, path: 'opts.stdin', message: `the stdin stream given to exec failed: ${why}`, cause: this.#inputError });
  }
}

/** Run one command through the transport; see ProcessRun. */
export function runProcess(transport: SandboxTransport, argv: readonly string[], opts: ExecOptions, ctx: Context): Promise<ProcessOutcome> {
  return new ProcessRun(transport, opts, ctx).run(argv);
}
