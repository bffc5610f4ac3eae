import type { Readable, Writable } from 'node:stream';
import type { BuildProgress, NetworkMode, NetworkNotice, PullProgress } from '../contract.js';
import type { BerthError, Operation } from '../errors.js';

/**
 * What a backend supplies for one sandbox: a small transport over its own API. The kit's
 * `SandboxEnvironment` turns it into a full `Environment` (lifecycle, exec semantics, transfers,
 * liveness and error classification), so every backend behaves the same.
 *
 * One transport object serves one environment; it is made by the backend's `environment()` and
 * knows the environment's id and spec from there.
 */
export interface SandboxTransport {
  /**
   * Make the sandbox exist and run: pull the image, create, start. Resolve once commands can run
   * in it. Honour `ctx.signal` (the caller's abort or the startup deadline): abort calls in flight
   * where the API allows; the kit stops waiting either way and calls `remove()` afterwards.
   * Reject with a BerthError where the failure is known (a pull refused, a spec the API refused).
   */
  create(ctx: CreateContext): Promise<void>;
  /**
   * After a `create()` that rejected: could it have made a sandbox? Without this method the kit
   * assumes it could ('unknown'). See CreateOutcome for what teardown does with each answer.
   */
  createOutcome?(): CreateOutcome;
  /** What the backend says of the sandbox now. A sandbox that no longer exists is `running: false`. */
  inspect(): Promise<SandboxStatus>;
  /** Remove the sandbox and what it owns. Must succeed when it is already gone, or was never made. */
  remove(): Promise<void>;
  /** Start one process in the sandbox. Reject when it could not be started (a native error is fine). */
  spawn(request: ProcessRequest): Promise<SandboxProcess>;
  /**
   * Map a native error of any call above to berth's taxonomy: the API unreachable or failing
   * (BackendUnavailableError), berth's credentials refused (BackendAuthError), the sandbox gone
   * (SandboxLostError; the kit then asks `inspect()` how it ended). Undefined when unknown.
   */
  mapError(error: unknown, operation: Operation): BerthError | undefined;
  /**
   * Save the sandbox's filesystem as an image new sandboxes of this backend can start from
   * (backends with the snapshot capability). Label it with `ctx.labels` so sweep finds it.
   */
  snapshot?(ctx: SnapshotContext): Promise<SnapshotImage>;
  /** Switch the running sandbox's network (backends with the networkSwitch capability). */
  setNetwork?(mode: NetworkMode): Promise<void>;
  /** A native, faster way to move tar archives in and out, if the backend has one. */
  readonly archive?: ArchiveTransport;
  /**
   * `spawn` runs a process as `request.user` itself (Docker's exec User). Otherwise the kit runs
   * such commands through its user launcher (user-launcher.ts), which switches user inside the
   * sandbox with a tool the image has, and `spawn` never sees a `user`.
   */
  readonly nativeUser?: boolean;
  /**
   * The sandbox can be restarted or replaced under the same name (a pod's container): the kit then
   * asks `inspect()` after every command that exits non-zero, so a fresh container's "No such
   * file" becomes the SandboxLostError it is. One status read per failed command.
   */
  readonly replaceable?: boolean;
}

/**
 * What a create that failed left behind, as the transport knows it. 'not-attempted': no request
 * that makes the sandbox was sent (it failed pulling or building); 'refused': that request never
 * reached the API (the connection was refused or the socket missing before anything was sent);
 * either way teardown has nothing to remove and does not retry an unreachable backend for it.
 * 'unknown': the request was sent and its answer lost (a connection cut after sending), so a
 * sandbox may exist: teardown removes it as if 'created'.
 */
export type CreateOutcome = 'not-attempted' | 'refused' | 'unknown' | 'created';

export interface CreateContext {
  /** Berth's labels (managed, session, environment, owner) merged over the spec's and the backend's. */
  readonly labels: Readonly<Record<string, string>>;
  /** Fires on the caller's abort or the startup deadline. */
  readonly signal: AbortSignal;
  /** Say what is happening: a phase change, a status (kept as StartupTimeoutError.lastStatus), pull progress, throttling. */
  progress(update: StartProgress): void;
  /** Say what became of the sandbox's network while it lives (an allowlist's refresh): valid after the start too, unlike progress. */
  notify(notice: NetworkNotice): void;
  /**
   * Say that the sandbox is lost, as the engine told you unasked while it lives (a service that
   * ended or was restarted, seen on a watch): valid after the start too. Its next operation
   * rejects with SandboxLostError naming `reason`.
   */
  lost(reason: string): void;
}

export interface SnapshotContext {
  /** berth's labels for the image (managed, session, owner, created, and berth.snapshot-of). */
  readonly labels: Readonly<Record<string, string>>;
  readonly signal?: AbortSignal;
}

/** An image a transport made of its sandbox. */
export interface SnapshotImage {
  /** What spec.image takes to start from it. */
  ref: string;
  /** Delete it; must succeed when it is already gone. */
  remove(): Promise<void>;
}

export interface StartProgress {
  phase?: 'pulling' | 'building' | 'starting';
  /**
   * A mark of the start the engine just said it reached (Environment.startTimings): 'accepted' (it
   * took the request that makes the sandbox), 'scheduled' (placed on a node), 'pulled' (the image
   * is there), 'running' (its main process runs; the kit marks it when create() resolves if you did
   * not), 'network' (network 'none' proved from inside). Each counts once, its first time; say only
   * what your engine tells you.
   */
  reached?: 'accepted' | 'scheduled' | 'pulled' | 'running' | 'network';
  status?: string;
  pull?: PullProgress;
  build?: BuildProgress;
  /**
   * The engine refused or slowed the create because it is overloaded (Kubernetes' 429, Modal's
   * RESOURCE_EXHAUSTED rate limit), with its Retry-After when it gave one. The kit's creation
   * limiter then holds back every other start of this backend instance for that long (or 0.5 s
   * doubling to 10 s without one) and halves the creations it lets run at once. The transport
   * still waits and retries this create itself, within `signal`; a limit that waiting will not
   * lift (a quota) is an error, not this.
   */
  throttled?: { retryAfterMs?: number };
}

export type SandboxStatus =
  | { running: true }
  | {
      running: false;
      /** What was seen, e.g. 'exited (137)', 'OOMKilled', 'Evicted', 'removed'. */
      reason: string;
      /** The sandbox ended because it reached `timeouts.lifetimeMs` (the task's doing, not a loss). */
      lifetimeExpired?: boolean;
      /**
       * With `lifetimeExpired`: the lifetime that ran out was not the spec's (it sets no
       * `timeouts.lifetimeMs`) but the backend's option `defaultLifetimeMs`, this many ms. The
       * error then says so and names the option, rather than a lifetime the task never asked for.
       */
      defaultLifetimeMs?: number;
    };

export interface ProcessRequest {
  /** An exact argv; the kit adds `sh -c` for shell strings, and enters an exec's cwd itself. */
  argv: readonly string[];
  /** The whole environment to add for this process (spec env is the backend's business). */
  env: Readonly<Record<string, string>>;
  /** Attach a stdin the kit will write to and close. */
  stdin: boolean;
  /** Run as root where the backend can choose the user (the tree killer, transfers over exec). */
  asRoot?: boolean;
  /** Run as this user (a name or uid, optionally ':group'): the caller's `opts.user`. Only for transports with `nativeUser`. */
  user?: string;
  /**
   * Give the process a pseudo-terminal of this size (backends claiming the tty capability only: the
   * kit refuses it for the others). Everything the process writes then comes on `stdout`, raw
   * (`stderr` just ends); `stdin` is what is typed, and its end must not cut the output short (a
   * terminal has no EOF: leave the input open). Size the terminal as soon as the API lets you (at
   * creation, or right after the start): the kit's argv waits for that size before the command runs.
   */
  tty?: { rows: number; cols: number };
}

export interface SandboxProcess {
  /** Present when requested. Writes must apply backpressure; `end()` closes the process's stdin. */
  readonly stdin?: Writable;
  /** Output streams hold their bytes until the kit reads them, also after the process has exited. */
  readonly stdout: Readable;
  readonly stderr: Readable;
  /**
   * Settles once stdout and stderr have ended: how the process ended, or a rejection when the
   * transport failed (a connection error). The kit reads it after the output, so nothing is lost.
   */
  readonly exit: Promise<ProcessExit>;
  /**
   * The process's PID inside the sandbox, if the transport can tell. The tree killer then also
   * kills it by PID, which catches commands that cleared their environment (env -i, sudo).
   */
  pid?(): Promise<string | undefined>;
  /**
   * Stop waiting on this process: drop the connection. Output then ends (without an error) and
   * `exit` settles soon. A `stdin` that is destroyed must close the process's stdin, too.
   */
  abandon(): void;
}

export interface ProcessExit {
  /** null when the backend never said how the process ended. */
  code: number | null;
  /** The signal that ended it, if the backend reports one. */
  signal?: string;
  /** The connection ended abnormally (a frame cut off): the kit checks whether the sandbox lives. */
  interrupted?: boolean;
}

export interface ArchiveTransport {
  /** Extract a tar stream at '/' in the sandbox (entry names are relative to '/'). */
  put(tar: Readable, signal?: AbortSignal): Promise<void>;
  /** A tar of `remotePath`, entries under its basename; undefined when the path does not exist. */
  get(remotePath: string, signal?: AbortSignal): Promise<Readable | undefined>;
}
