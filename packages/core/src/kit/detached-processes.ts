import { randomBytes } from 'node:crypto';
import { cancelledFrom } from '../abort.js';
import type { ExecOptions, ExecResult } from '../contract.js';
import { BackendUnavailableError, ConfigError } from '../errors.js';
import type { AttachOptions, ProcessInfo, SpawnedExit, SpawnedProcess, SpawnOptions } from '../processes.js';
import { TailBuffer } from '../tail-buffer.js';
import { END_SCRIPT, EXIT_SCRIPT, KILL_SCRIPT, LIST_SCRIPT, PROCESS_ROOT, SPAWN_SCRIPT, WATCH_SCRIPT, WRITE_SCRIPT } from './process-scripts.js';

type Exec = (command: readonly string[], opts?: ExecOptions) => Promise<ExecResult>;
interface Where {
  backend: string;
  environmentId: string;
}

const DEFAULT_REPLAY = 1024 * 1024;
const KEPT_OUTPUT = 10 * 1024 * 1024;
const SIGNAL = /^(SIG)?[A-Z][A-Z0-9]*$/;
const ID = /^p-[0-9a-f]{12}$/;
const NO_SUCH = 93;
const NO_STDIN = 94;

const sh = (script: string, ...args: string[]): string[] => ['/bin/sh', '-c', script, 'berth-proc', ...args];
const dirOf = (id: string) => `${PROCESS_ROOT}/${id}`;

/**
 * Detached processes of one sandbox (Environment.spawn / attach / processes), built once for every
 * backend on the sandbox's exec: a process's state is a directory in the sandbox (process-scripts.ts),
 * so it outlives its handles and never its sandbox, and a lost sandbox fails each call with exec's
 * typed error.
 */
export class DetachedProcesses {
  readonly #exec: Exec;
  readonly #where: () => Where;

  constructor(exec: Exec, where: () => Where) {
    this.#exec = exec;
    this.#where = where;
  }

  async spawn(command: string | readonly string[], opts: SpawnOptions = {}): Promise<SpawnedProcess> {
    const argv = typeof command === 'string' ? ['/bin/sh', '-c', command] : [...command];
    if (argv.length === 0) throw this.#config('command', 'spawn: command is empty: give a string or a non-empty argv');
    const id = `p-${randomBytes(6).toString('hex')}`;
    // One exec starts the supervisor and then follows its output; its first line says it runs.
    let launched!: () => void;
    const running = new Promise<void>((resolve) => (launched = resolve));
    let marker: Buffer | undefined = Buffer.alloc(0);
    const watch = (detached: AbortSignal, out: (chunk: Uint8Array) => void, err: (chunk: Uint8Array) => void) =>
      this.#exec(sh(SPAWN_SCRIPT, dirOf(id), opts.stdin ? '1' : '0', ...argv), {
        ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}),
        ...(opts.user !== undefined ? { user: opts.user } : {}),
        ...(opts.env !== undefined ? { env: opts.env } : {}),
        signal: detached,
        maxOutputBytes: 1,
        onStdout: (chunk) => {
          if (marker === undefined) return out(chunk);
          marker = Buffer.concat([marker, chunk]);
          const nl = marker.indexOf(10);
          if (nl < 0) return;
          const rest = marker.subarray(nl + 1);
          marker = undefined;
          launched();
          if (rest.length > 0) out(rest);
        },
        onStderr: err,
      });
    const handle = this.#follow(id, argv, { onStdout: opts.onStdout, onStderr: opts.onStderr, replayBytes: -1 }, opts.stdin === true, watch);
    const started = await Promise.race([running.then(() => undefined), handle.watching]);
    if (started !== undefined) {
      const run = started;
      throw new BackendUnavailableError({
        ...this.#ctx('exec'),
        message: `spawn: the process's supervisor did not start in ${this.#where().environmentId} (exit ${run.exitCode}${run.timedOut ? ', timed out' : ''}: ${run.stderr.trim().slice(-300)}); it needs /bin/sh and a writable ${PROCESS_ROOT}`,
      });
    }
    return handle.process;
  }

  async attach(id: string, opts: AttachOptions = {}): Promise<SpawnedProcess> {
    if (!ID.test(id)) throw this.#config('id', `attach: "${id}" is not a process id (spawn() and processes() give them: p- and 12 hex digits)`);
    const found = (await this.list()).find((p) => p.id === id);
    if (!found) throw this.#config('id', `attach: no process ${id} in ${this.#where().environmentId} (processes() lists them)`);
    const replay = opts.replayBytes ?? DEFAULT_REPLAY;
    if (!Number.isInteger(replay) || replay < 0) throw this.#config('opts.replayBytes', `attach: replayBytes is ${replay}: a whole number of bytes >= 0`);
    return this.#follow(id, found.command, { onStdout: opts.onStdout, onStderr: opts.onStderr, replayBytes: replay }, true).process;
  }

  async list(): Promise<ProcessInfo[]> {
    const run = await this.#exec(sh(LIST_SCRIPT), { timeoutMs: 30_000 });
    return run.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        const [id = '', code = '', up = '0', argv = ''] = line.split('\t');
        const command = argv.split('\x1f');
        command.pop();
        return { id, command, running: up === '1', ...(code ? { exitCode: Number(code) } : {}) };
      });
  }

  #follow(
    id: string,
    command: readonly string[],
    opts: { onStdout?: ((c: Uint8Array) => void) | undefined; onStderr?: ((c: Uint8Array) => void) | undefined; replayBytes: number },
    stdin: boolean,
    started?: (detached: AbortSignal, out: (chunk: Uint8Array) => void, err: (chunk: Uint8Array) => void) => Promise<ExecResult>,
  ): { process: SpawnedProcess; watching: Promise<ExecResult> } {
    const detached = new AbortController();
    const stdout = new TailBuffer(KEPT_OUTPUT);
    const stderr = new TailBuffer(KEPT_OUTPUT);
    const dir = dirOf(id);
    const out = (chunk: Uint8Array) => {
      stdout.push(chunk);
      opts.onStdout?.(chunk);
    };
    const err = (chunk: Uint8Array) => {
      stderr.push(chunk);
      opts.onStderr?.(chunk);
    };
    const watching = started
      ? started(detached.signal, out, err)
      : // Output kept here (the tail, for wait()), not twice in exec's result.
        this.#exec(sh(WATCH_SCRIPT, dir, String(opts.replayBytes), String(opts.replayBytes)), {
          signal: detached.signal,
          maxOutputBytes: 1,
          onStdout: out,
          onStderr: err,
        });
    const ended = watching.then(async (watch): Promise<SpawnedExit> => {
      if (watch.exitCode === NO_SUCH) throw this.#gone(id);
      const exit = await this.#exec(sh(EXIT_SCRIPT, dir), { timeoutMs: 30_000 });
      // Its supervisor ended without an exit status: killed with it (SIGKILL from outside).
      const exitCode = exit.stdout.trim() === '' ? 137 : Number(exit.stdout.trim());
      return { exitCode, stdout: stdout.bytes().toString('utf8'), stderr: stderr.bytes().toString('utf8') };
    });
    // A rejection nobody waited for must not crash the caller's process: wait() gives it.
    ended.catch(() => undefined);
    const call = async (script: string, args: string[], what: string, input?: string | Uint8Array) => {
      const run = await this.#exec(sh(script, dir, ...args), { timeoutMs: 30_000, ...(input !== undefined ? { stdin: input } : {}) });
      if (run.exitCode === NO_SUCH) throw this.#gone(id);
      if (run.exitCode === NO_STDIN)
        throw this.#config('opts.stdin', `${what}: process ${id} has no stdin to write to (spawn it with stdin: true), or it has ended`);
      if (run.exitCode !== 0)
        throw new BackendUnavailableError({
          ...this.#ctx('exec'),
          message: `${what} on process ${id} failed (exit ${run.exitCode}): ${run.stderr.trim().slice(-300)}`,
        });
    };
    const process: SpawnedProcess = {
      id,
      command,
      wait: () => ended,
      kill: async (signal = 'TERM') => {
        if (!SIGNAL.test(signal)) throw this.#config('signal', `kill: "${signal}" is not a signal name (TERM, KILL, INT, HUP...)`);
        await call(KILL_SCRIPT, [signal.replace(/^SIG/, '')], 'kill');
      },
      write: async (data) => {
        if (!stdin) throw this.#config('opts.stdin', `write: process ${id} was spawned without stdin: true`);
        await call(WRITE_SCRIPT, [], 'write', data);
      },
      end: async () => {
        if (!stdin) throw this.#config('opts.stdin', `end: process ${id} was spawned without stdin: true`);
        await call(END_SCRIPT, [], 'end');
      },
      detach: () => {
        if (!detached.signal.aborted) detached.abort(cancelledFrom(new AbortController().signal, this.#ctx('exec')));
      },
    };
    return { process, watching };
  }

  #ctx(operation: 'exec') {
    return { operation, ...this.#where() };
  }

  #config(path: string, message: string): ConfigError {
    return new ConfigError({ ...this.#ctx('exec'), path, message });
  }

  #gone(id: string): ConfigError {
    return this.#config('id', `no process ${id} in ${this.#where().environmentId}: its directory ${dirOf(id)} is gone`);
  }
}
