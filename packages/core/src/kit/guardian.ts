import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, openSync } from 'node:fs';
import { hostname } from 'node:os';
import { fileURLToPath } from 'node:url';
import { SESSION_ID } from '../labels.js';

/** Set to 0, false, off or no to start no guardian (the backend option `guardian` wins when given). */
export const GUARDIAN_ENV = 'BERTH_GUARDIAN';
/** A file the guardian appends what it did to (counts and names, never credentials). For debugging. */
export const GUARDIAN_LOG_ENV = 'BERTH_GUARDIAN_LOG';

/** How a guardian process rebuilds this backend, to remove a dead process's resources. */
export interface GuardianTarget {
  /**
   * A built JavaScript module exporting `guardianBackend(config)`, which returns the backend (only
   * its `sweep()`, and `close()` if it has one, are used). A URL of the package's dist directory.
   */
  module: URL;
  /** JSON. May hold credentials: it travels over the guardian's stdin only, never argv or environment. */
  config: unknown;
}

/** The one message on the guardian's stdin, as one JSON line; then the pipe stays open until this process ends. */
export interface GuardianMessage {
  owner: { pid: number; host: string; session: string };
  /** This process's environment (credential helpers, exec plugins read it), kept out of the guardian's visible one. */
  env: Record<string, string>;
  module: string;
  config: unknown;
  backend: string;
}

/** Is a guardian wanted? The option when given, else BERTH_GUARDIAN, else yes. */
export function guardianEnabled(option: boolean | undefined, env: Readonly<Record<string, string | undefined>> = process.env): boolean {
  if (option !== undefined) return option;
  const value = env[GUARDIAN_ENV]?.trim().toLowerCase();
  return !(value === '0' || value === 'false' || value === 'off' || value === 'no');
}

/**
 * The watchdog's script, built. From src/kit/ (tests run the sources) and dist/kit/ alike the
 * same file: the watchdog is a plain Node process, which cannot run TypeScript.
 */
const WATCHDOG = new URL('../../dist/kit/guardian-main.js', import.meta.url);

/**
 * How the watchdog is started and how it finds a backend's guardian module. By default: Node runs
 * this package's built guardian-main.js, which imports the module the backend names. A bundle of
 * berth (one file holding the packages, as harbor's plugin ships it) has neither file: it starts
 * itself with `args` and names modules its own way (see useGuardianLauncher).
 */
export interface GuardianLauncher {
  /** The script Node runs, and the arguments after it. */
  script: string;
  args: readonly string[];
  /** What the message's `module` says for this target and backend. */
  module(target: GuardianTarget, backend: string): string;
}

let launcher: GuardianLauncher | undefined;

/** For bundles of berth: start the watchdog this way from now on (see GuardianLauncher). */
export function useGuardianLauncher(next: GuardianLauncher): void {
  launcher = next;
}

/**
 * The targets this process has a guardian for. Backend instances reaching the same engine the same
 * way share one: it sweeps by this process's pid, so it removes what any of them made.
 */
const guarded = new Set<string>();

/** Variables the watchdog is started with: enough to start Node, nothing secret. The rest comes over the pipe. */
const VISIBLE_ENV = ['PATH', 'HOME', 'LANG', 'TMPDIR', 'SYSTEMROOT'];

/**
 * One backend instance's guardian (shared with instances reaching the same engine): a detached
 * Node process started before its first sandbox is created, holding the read end of a pipe whose
 * write end only this process has. When this process ends, however it ends (SIGKILL too), the
 * kernel closes the pipe; the guardian reads EOF and sweeps what this process (its pid, host and
 * session) created, with the backend's own sweep.
 * Detached (its own session), so a Ctrl-C or a kill of this process group does not take it along.
 * A guardian that cannot start warns and leaves sandbox creation alone.
 */
export class Guardian {
  readonly #backend: string;
  readonly #enabled: boolean;
  readonly #target: (() => GuardianTarget) | undefined;
  #started = false;

  constructor(backend: string, option: boolean | undefined, target: (() => GuardianTarget) | undefined) {
    this.#backend = backend;
    this.#enabled = guardianEnabled(option) && target !== undefined;
    this.#target = target;
  }

  /** Start the guardian if it is wanted and not started yet. Never throws. */
  ensure(): void {
    if (this.#started || !this.#enabled) return;
    this.#started = true;
    try {
      this.#spawn(this.#target!());
    } catch (error) {
      this.#warn(error);
    }
  }

  #spawn(target: GuardianTarget): void {
    const key = createHash('sha256')
      .update(`${this.#backend}\0${target.module.href}\0${JSON.stringify(target.config)}`)
      .digest('hex');
    if (guarded.has(key)) return;
    const script = launcher?.script ?? fileURLToPath(WATCHDOG);
    if (!existsSync(script)) throw new Error(`its script ${script} is missing (is @berth/core built?)`);
    const env: Record<string, string> = {};
    for (const name of VISIBLE_ENV) if (process.env[name] !== undefined) env[name] = process.env[name]!;
    const log = process.env[GUARDIAN_LOG_ENV];
    const child = spawn(process.execPath, [script, ...(launcher?.args ?? [])], {
      detached: true,
      stdio: ['pipe', 'ignore', log ? openSync(log, 'a') : 'ignore'],
      env,
    });
    child.on('error', (error) => {
      guarded.delete(key);
      this.#warn(error);
    });
    guarded.add(key);
    child.unref();
    const pipe = child.stdin!;
    // The guardian gone early (killed by someone) must not crash this process with EPIPE.
    pipe.on('error', () => undefined);
    const message: GuardianMessage = {
      owner: { pid: process.pid, host: hostname(), session: SESSION_ID },
      env: Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined)),
      module: launcher ? launcher.module(target, this.#backend) : target.module.href,
      config: target.config,
      backend: this.#backend,
    };
    // Written at once into the pipe's buffer: the guardian reads it even if this process dies next.
    pipe.write(`${JSON.stringify(message)}\n`);
    // The pipe must not keep this process alive; it stays open until the process ends.
    (pipe as unknown as { unref(): void }).unref();
  }

  #warn(error: unknown): void {
    const why = error instanceof Error ? error.message : String(error);
    process.emitWarning(`berth: the ${this.#backend} guardian did not start (${why}); sandboxes of this process are removed only by teardown() or sweep`, {
      code: 'BERTH_GUARDIAN',
    });
  }
}
