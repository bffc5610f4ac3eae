// Long-lived processes in a sandbox (Environment.spawn / attach / processes): the public types.

/** How `spawn()` starts a detached process. */
export interface SpawnOptions {
  cwd?: string;
  /** Run as this user, as exec's `user` (needs the backend's `execUser` capability). */
  user?: string;
  env?: Record<string, string>;
  /** Keep its stdin open for `write()` and `end()`; default false: its stdin is empty (/dev/null). */
  stdin?: boolean;
  /** Called with output as it arrives (while this handle follows it). */
  onStdout?: (chunk: Uint8Array) => void;
  onStderr?: (chunk: Uint8Array) => void;
}

/** How `attach()` follows a process already running (or ended). */
export interface AttachOptions {
  /**
   * How much of each stream's earlier output is replayed first, from its end: default 1 MiB
   * (the whole output when shorter). 0: only what comes from now on.
   */
  replayBytes?: number;
  onStdout?: (chunk: Uint8Array) => void;
  onStderr?: (chunk: Uint8Array) => void;
}

/** How a detached process ended. */
export interface SpawnedExit {
  /** Its exit status; 128 + n when a signal n ended it (as a shell reports it). */
  exitCode: number;
  /** What this handle saw of each stream (its replay, then live), the tail kept: 10 MiB each. */
  stdout: string;
  stderr: string;
}

/** One detached process of a sandbox, as `processes()` lists it. */
export interface ProcessInfo {
  readonly id: string;
  /** Its argv as spawn() was given it (a string command: ['/bin/sh', '-c', command]). */
  readonly command: readonly string[];
  readonly running: boolean;
  /** Set once it ended. */
  readonly exitCode?: number;
}

/**
 * A handle on a detached process (spawn(), attach()). The process is the sandbox's, not the
 * handle's: it runs on when the handle is dropped or detached, and ends with the sandbox at the
 * latest. Any number of handles may follow one process. A sandbox lost under it fails every call
 * and `wait()` with the sandbox's typed error (as exec's).
 */
export interface SpawnedProcess {
  readonly id: string;
  readonly command: readonly string[];
  /** Resolves once the process ended and this handle has read all its output. */
  wait(): Promise<SpawnedExit>;
  /** Sends `signal` (default 'TERM') to its process group; resolves once sent, not once it ended (wait() says that). */
  kill(signal?: string): Promise<void>;
  /** Writes to its stdin (spawned with `stdin: true`, else a ConfigError); resolves once written. */
  write(data: string | Uint8Array): Promise<void>;
  /** Closes its stdin: the process reads end of input. */
  end(): Promise<void>;
  /** Stops following it (no more callbacks; wait() rejects with CancelledError); the process runs on. */
  detach(): void;
}
