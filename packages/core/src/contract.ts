import type { TypedEvents } from './events.js';
import type { Hint, Remedy } from './errors/remedy.js';
import type { BuildProgress } from './build-spec.js';
import type { EnvironmentSpec, EnvironmentSpecInput, ImageAuth } from './spec.js';
import type { StartMark, StartTimings } from './start-timings.js';
import type { NetworkAllowlist } from './network-allowlist.js';
import type { AttachOptions, ProcessInfo, SpawnedProcess, SpawnOptions } from './processes.js';
import type { PortForward } from './ports.js';

export type { BuildProgress };

export const SPECIFICATION_VERSION = 'berth-backend-v1' as const;

/**
 * What an exec reads on stdin: a string or bytes, or a stream (a Node Readable or any
 * AsyncIterable of bytes) fed with backpressure and closed at its end. A stream belongs to the
 * exec: when the command ends it is destroyed, read to the end or not. If it fails, the exec
 * rejects with a ConfigError on `opts.stdin`.
 */
export type ExecStdin = string | Uint8Array | NodeJS.ReadableStream | AsyncIterable<Uint8Array>;

export interface ExecOptions {
  cwd?: string;
  /** Run as this user: a name in the image's /etc/passwd or a uid, optionally with ':group'. Default: the image's user. */
  user?: string;
  env?: Record<string, string>;
  /** Kill the command (its whole process tree) after this long and return `timedOut: true`. */
  timeoutMs?: number;
  stdin?: ExecStdin;
  /** Per stream; the tail is kept. Default 10 MiB. */
  maxOutputBytes?: number;
  onStdout?: (chunk: Uint8Array) => void;
  onStderr?: (chunk: Uint8Array) => void;
  /** Aborting kills the command's process tree and rejects with CancelledError. */
  signal?: AbortSignal;
  /**
   * Give the command a pseudo-terminal (`true`: 24 rows by 80 columns). Its stdout and stderr then
   * arrive merged on stdout (onStdout / result.stdout; stderr stays empty), with line endings as
   * the terminal makes them (\r\n). stdin, when given, is what the user types: the terminal echoes
   * it, and its end is not an end of input (a terminal has none; type '\x04' for that). Without
   * stdin nothing is typed, so a command that reads its terminal waits (give it a timeoutMs).
   * Needs the backend's `tty` capability: a CapabilityError otherwise.
   */
  tty?: boolean | { rows: number; cols: number };
}

/**
 * A command that ran. A non-zero exit or a timeout is data for the caller, not an exception:
 * exec() rejects only when the infrastructure failed.
 */
export interface ExecResult {
  exitCode: number;
  /** Set when berth killed the command (timeout). */
  signal?: string;
  stdout: string;
  stderr: string;
  /** The raw bytes behind stdout/stderr, for output that is not UTF-8. */
  stdoutBytes: Uint8Array;
  stderrBytes: Uint8Array;
  timedOut: boolean;
  truncated: { stdout: boolean; stderr: boolean };
  durationMs: number;
}

export interface TransferOptions {
  signal?: AbortSignal;
}

export interface DownloadDirOptions extends TransferOptions {
  /**
   * Symlinks in the tree that lead outside the target (absolute ones such as /etc/mtab, a
   * virtualenv's python, or relative ones climbing out): 'skip' (the default) leaves them out and
   * counts them in `skippedSymlinks`; 'keep' makes them as they are (nothing is ever written
   * through them; links are made last); 'refuse' fails the whole download. Nothing is ever written
   * outside the target, whichever you pick.
   */
  outsideLinks?: 'skip' | 'keep' | 'refuse';
}

export interface TransferStats {
  files: number;
  directories: number;
  symlinks: number;
  bytes: number;
  durationMs: number;
  /** downloadDir: symlinks leading outside the target that were left out (outsideLinks 'skip'). */
  skippedSymlinks?: number;
}

export type EnvironmentPhase = 'created' | 'pulling' | 'building' | 'starting' | 'running' | 'lost' | 'stopping' | 'stopped' | 'failed';

export interface PullProgress {
  image: string;
  status: string;
  layer?: string;
  current?: number;
  total?: number;
}

/** The detail of a 'stopped' phase whose teardown found nothing to remove. */
export const NEVER_CREATED = 'nothing to remove: the sandbox was never created';

/** What a pooled sandbox's start reported before its claim (pull and build progress), in order, for the claimer to replay. */
export type StartupEvent = { name: 'pull'; progress: PullProgress } | { name: 'build'; progress: BuildProgress };

/** A sandbox a pool handed out: an Environment, with what its start said before anyone was listening. */
export interface ClaimedEnvironment extends Environment {
  readonly startup: readonly StartupEvent[];
}

/**
 * What an allowlist's refresh did (backends that allow hostnames by the addresses berth resolves):
 * 'refreshed' when some name's addresses changed and the sandbox now allows (and resolves) the new
 * ones; 'refresh-failed' when resolving failed, the previous addresses still in force.
 */
export type NetworkNotice =
  | { kind: 'refreshed'; hosts: ReadonlyArray<{ name: string; addresses: readonly string[] }> }
  | { kind: 'refresh-failed'; error: Error };

export interface EnvironmentEvents {
  /** The phase changed; 'stopped' comes with a detail when teardown found nothing to remove. */
  phase: (phase: EnvironmentPhase, detail?: string) => void;
  pull: (progress: PullProgress) => void;
  build: (progress: BuildProgress) => void;
  /** The sandbox was seen to die while in use. */
  lost: (reason: string) => void;
  /** Its allowlist's hostnames, resolved again while it lives (options.refreshNamesMs), changed what is allowed, or could not be resolved. */
  network: (notice: NetworkNotice) => void;
  /** The start reached a mark (each once): which, and the start's timings so far (Environment.startTimings). */
  reached: (mark: StartMark, timings: StartTimings) => void;
}

/**
 * 'public': the backend's default network. 'none': no packet enters or leaves the sandbox except on
 * loopback (checked from inside: a TCP connect to a listener a public sandbox reaches fails, a DNS
 * lookup fails). How is the backend's affair: Docker and Modal take the interface away (a Modal
 * sandbox made to switch gets an empty outbound allowlist instead), Kubernetes labels the pod for a
 * deny-all NetworkPolicy the cluster must enforce. `{ allow: [...] }`: an egress allowlist (see
 * NetworkAllowlist), on backends whose `networkAllowlist` capability says how they enforce it.
 */
export type NetworkMode = 'public' | 'none' | NetworkAllowlist;

/**
 * How a backend enforces an egress allowlist, entry kind by entry kind, so a user can tell what
 * actually holds (Environment.networkEnforcement, the capability table):
 * - `addresses`: IPv4 addresses and ranges. 'packet': every packet's destination address is checked
 *   (any protocol, any port).
 * - `names`: hostnames. 'resolved': resolved to addresses when the allowlist is applied and enforced
 *   as addresses (so everything sharing an address is let through too), and resolved again while
 *   the sandbox lives where the backend refreshes them (options.refreshNamesMs); 'tls-sni': TLS connections whose server name matches (port
 *   443 only); 'proxy': connections through an egress proxy that matches TLS SNI, HTTP Host and
 *   CONNECT; false: names cannot be listed (refused before any I/O).
 * - `wildcards`: whether `*.domain` entries can be listed.
 * - `dns`: 'open' (any name resolves; only connections are filtered), 'allowed' (only allowed names
 *   resolve), 'none' (no resolver is reachable: names must be resolved by berth).
 * - `connections`: whether a switch ends connections the new network no longer allows ('ended') or
 *   lets those already open run on ('kept').
 */
export interface AllowlistEnforcement {
  addresses: 'packet';
  names: 'resolved' | 'tls-sni' | 'proxy' | false;
  wildcards: boolean;
  dns: 'open' | 'allowed' | 'none';
  connections: 'ended' | 'kept';
}

export interface Environment extends AsyncDisposable {
  readonly id: string;
  readonly backend: string;
  readonly spec: EnvironmentSpec;
  readonly phase: EnvironmentPhase;
  readonly events: TypedEvents<EnvironmentEvents>;
  start(opts?: { signal?: AbortSignal }): Promise<void>;
  exec(command: string | readonly string[], opts?: ExecOptions): Promise<ExecResult>;
  uploadFile(localPath: string, remotePath: string, opts?: TransferOptions): Promise<void>;
  uploadDir(localDir: string, remoteDir: string, opts?: TransferOptions): Promise<TransferStats>;
  downloadFile(remotePath: string, localPath: string, opts?: TransferOptions): Promise<void>;
  downloadDir(remoteDir: string, localDir: string, opts?: DownloadDirOptions): Promise<TransferStats>;
  /** The sandbox's network now: spec.network until setNetwork() changes it. */
  readonly network: NetworkMode;
  /**
   * How this sandbox's backend enforces an allowlist (see AllowlistEnforcement), and whether the
   * sandbox can switch networks; `allowlist` is undefined on a backend that cannot enforce one.
   */
  readonly networkEnforcement: { allowlist: AllowlistEnforcement | undefined; switches: boolean };
  /**
   * When its start reached each mark (requested, admitted, accepted, scheduled, pulled, running,
   * network, firstCommand), in ms after start() was called; undefined before start(). A copy, kept
   * after a failed start too (the marks it reached). A pool's sandbox: its own start, before the claim.
   */
  readonly startTimings: StartTimings | undefined;
  /**
   * Switch the running sandbox's network between phases (e.g. offline agent, online verifier).
   * Resolves once the new state holds inside the sandbox, not merely once it was asked for.
   * Needs `spec.networkSwitch: true` (ConfigError otherwise) on a backend with the
   * `networkSwitch` capability (refused at environment() otherwise).
   */
  setNetwork(mode: NetworkMode): Promise<void>;
  /**
   * Starts a detached process: it runs on after this call, after its handle is dropped, and until
   * it ends or the sandbox does (see SpawnedProcess). Its output is kept in the sandbox, so any
   * later handle (attach()) replays it. A string command runs with /bin/sh -c, as exec's.
   */
  spawn(command: string | readonly string[], opts?: SpawnOptions): Promise<SpawnedProcess>;
  /** A new handle on a detached process of this sandbox (by its id): its earlier output replayed, then live. */
  attach(id: string, opts?: AttachOptions): Promise<SpawnedProcess>;
  /** The sandbox's detached processes, running and ended. */
  processes(): Promise<ProcessInfo[]>;
  /**
   * A local address (127.0.0.1:<port>) that reaches `port` on the sandbox's own 127.0.0.1, e.g. a
   * server a detached process started. Each connection goes through the backend's exec channel,
   * so network 'none' still holds (nothing leaves the sandbox's network); needs nc, python3 or
   * bash in the image. Closed at teardown.
   */
  port(port: number): Promise<PortForward>;
  /**
   * An image of the sandbox's filesystem as it is now, to start new sandboxes from (`spec.image:
   * snapshot.ref` on this backend): a setup done once (an agent installed, caches warmed) and
   * reused by every trial. Needs the backend's `snapshot` capability (CapabilityError otherwise,
   * saying what to do instead). The sandbox runs on; what its processes hold in memory is not kept.
   */
  snapshot(opts?: { signal?: AbortSignal }): Promise<Snapshot>;
  /**
   * Idempotent; never throws because the sandbox is already gone. Resolves with what it did (a
   * second call, the first call's answer); runTrials' sandbox accounting counts on it.
   */
  teardown(opts?: { signal?: AbortSignal }): Promise<TeardownResult>;
}

/** An image made from a sandbox's filesystem (Environment.snapshot). */
export interface Snapshot {
  /** What to give `spec.image` to start sandboxes from it, on the backend that made it. */
  readonly ref: string;
  readonly backend: string;
  /** The environment it was taken of. */
  readonly sourceId: string;
  readonly createdAt: Date;
  /**
   * Delete the image (idempotent). Sandboxes already started from it run on. It carries berth's
   * labels (or tags), so one never removed is found by `sweep()` once its owner is gone.
   */
  remove(): Promise<void>;
}

/** What a teardown did. */
export interface TeardownResult {
  /**
   * false: there was nothing to remove, the sandbox was never created (its start was never
   * called, or failed before the request that makes one reached the backend). true: a sandbox
   * existed or may have, and it is removed.
   */
  removed: boolean;
}

export type ImageAuthKind = 'basic' | 'identityToken' | 'aws' | 'secretName' | 'dockerConfig';

export interface Capabilities {
  gpus: boolean;
  /** Can it choose the GPU model (`resources.gpuTypes`, any of)? */
  gpuTypes: boolean;
  networkModes: ReadonlyArray<'public' | 'none'>;
  /** How it enforces `network: { allow }` (see AllowlistEnforcement); false: it cannot, and such specs are refused. */
  networkAllowlist: AllowlistEnforcement | false;
  /** Can a running sandbox's network be switched (spec.networkSwitch, Environment.setNetwork)? */
  networkSwitch: boolean;
  imageAuth: readonly ImageAuthKind[];
  mounts: ReadonlyArray<'image' | 'bind' | 'volume'>;
  /** Can exec run a command as another user (`opts.user`)? */
  execUser: boolean;
  /** Can exec give a command a pseudo-terminal (`opts.tty`)? */
  tty: boolean;
  /** Can it build `image: { build }` specs from a Dockerfile? */
  imageBuild: boolean;
  /** Can it save a running sandbox's filesystem as an image (`Environment.snapshot`)? */
  snapshot: boolean;
  /** Can it run spec.services beside the sandbox (a compose file's other services), reached by name? */
  services: boolean;
  /** Does the engine enforce resources.cpus / memoryMb / storageMb? */
  resourceLimits: { cpus: boolean; memory: boolean; storage: boolean };
}

export type PreflightStatus = 'ok' | 'warn' | 'fail';

export interface PreflightCheck {
  name: string;
  status: PreflightStatus;
  message: string;
  /** The option or flag the message names, when it names one (a failed check's error carries its own). */
  remedy?: Remedy;
  /** The error behind a failed check, serialised (secrets redacted). */
  error?: import('./errors.js').SerializedError;
}

export interface PreflightReport {
  backend: string;
  ok: boolean;
  checks: PreflightCheck[];
}

export interface SweepOptions {
  /** Also sweep resources older than this, wherever their owner runs (its liveness is only known on its own host). */
  olderThanMs?: number;
  /** Only resources of this berth session (the `berth.session` label). */
  session?: string;
  /** Remove nothing: report what would be removed, in `wouldRemove`. */
  dryRun?: boolean;
  /**
   * Only what this very process created (its pid and host in the owner labels), although it is
   * alive: for a process cleaning up after itself as it ends (`berth run` does, for sandboxes whose
   * teardown failed). Safe when BERTH_SESSION is shared by several processes.
   */
  ownedByThisProcess?: boolean;
  /**
   * Only what the process with this pid on this host created (the owner labels), whether or not it
   * is alive: the guardian's selection once the process it watches has died (see the guardian in
   * @berth/core's README).
   */
  ownedBy?: { pid: number; host: string };
}

export interface SweepReport {
  backend: string;
  /** What was removed (empty in a dry run). */
  removed: string[];
  failed: Array<{ id: string; message: string }>;
  /** Set when the sweep was a dry run. */
  dryRun?: boolean;
  /** A dry run's finds: the same ids or names `removed` would have held. */
  wouldRemove?: string[];
}

/**
 * What to tell a user of this backend instead, per capability it lacks (e.g. 'use a bind mount of an
 * extracted copy'); `remedied(...)` when the words name an option a remedy stands for.
 */
export type CapabilityHints = Partial<
  Record<
    | 'gpus'
    | 'gpuTypes'
    | 'network'
    | 'networkSwitch'
    | 'network.allowlist'
    | 'network.allowlist.names'
    | 'network.allowlist.wildcards'
    | 'network.allowlist.dns'
    | 'network.allowlist.connections'
    | 'execUser'
    | 'tty'
    | 'resources.cpus'
    | 'resources.memory'
    | 'resources.storage'
    | 'mounts.image'
    | 'mounts.bind'
    | 'mounts.volume'
    | 'imageBuild'
    | 'imageAuth'
    | 'snapshot'
    | 'services',
    Hint
  >
>;

export interface Backend {
  readonly specificationVersion: typeof SPECIFICATION_VERSION;
  readonly name: string;
  /**
   * Where this backend's sandboxes go, in words that carry no secret: the engine's address, the
   * cluster's server and namespace, Modal's server, environment and app. Part of a run's identity
   * (a resume elsewhere is refused). Reading it does no network I/O; it throws the ConfigError the
   * first start would (e.g. no kubeconfig).
   */
  readonly target: string;
  readonly capabilities: Capabilities;
  /** What to do instead, per capability this backend lacks: the words its CapabilityErrors use, for tools and docs. */
  readonly hints: CapabilityHints;
  /** Validates the spec (ConfigError / CapabilityError); does no I/O. */
  environment(spec: EnvironmentSpecInput): Environment;
  /** environment(spec) then start(); on failure the half-made sandbox is removed before rejecting. */
  start(spec: EnvironmentSpecInput, opts?: { signal?: AbortSignal }): Promise<Environment>;
  /** Can this backend run this spec, before a run tries 500 times? Never throws for a failed check. */
  preflight(spec?: EnvironmentSpecInput): Promise<PreflightReport>;
  /** Remove berth-labelled resources left behind by dead processes (with `dryRun`, only list them). */
  sweep(opts?: SweepOptions): Promise<SweepReport>;
  /**
   * A warm pool: `size` sandboxes of this spec started ahead and refilled as they are claimed,
   * under this backend's creation limits. Validates spec and options at once (ConfigError); starts
   * nothing until the first claim() or fill().
   */
  pool(spec: EnvironmentSpecInput, opts: PoolOptions): EnvironmentPool;
}

export interface PoolOptions {
  /** How many started sandboxes the pool keeps waiting for a claim (1 to 1000). */
  size: number;
  /**
   * An idle sandbox older than this is removed and replaced, so none waits past what the engine or
   * the image's freshness allows. Default 10 minutes. A pooled sandbox's `timeouts.lifetimeMs`
   * counts from its claim, not from its start (the engine's own deadline is set to lifetime plus
   * this, as a backstop should berth's machine be gone).
   */
  maxIdleMs?: number;
  /**
   * The most claims this pool will ever see (a runner knows: the attempts a task may take). The
   * pool then never starts a sandbox no claim will take: after the last claim it does not refill.
   * Default: no end. A claim beyond it is still served (with a cold start).
   */
  maxClaims?: number;
  /**
   * Run on each sandbox once it started, before it waits for a claim (a claim then finds it ready:
   * directories made, a cache warmed). A prepare that throws counts as a failed start: the sandbox
   * is removed and the error goes to the oldest waiting claim.
   */
  prepare?: (env: Environment) => Promise<void>;
}

/** What a pool holds and has done, counted since it was made. */
export interface PoolStats {
  /** Started and waiting for a claim. */
  idle: number;
  /** Being started now. */
  starting: number;
  /** Claims waiting for a sandbox. */
  waiting: number;
  /** Handed out by claim(). */
  claimed: number;
  /** Starts that failed. */
  failed: number;
  /** Idle sandboxes removed because they reached maxIdleMs. */
  expired: number;
  /** Idle sandboxes found dead at a claim, removed and never handed out. */
  dead: number;
}

export interface PoolEvents {
  /** A sandbox started and is waiting for a claim. */
  ready: (environmentId: string) => void;
  /** A claim got this sandbox, after waiting this long. */
  claimed: (environmentId: string, waitedMs: number) => void;
  /** An idle sandbox was removed: it reached maxIdleMs, was found dead at a claim, or the pool closed. */
  removed: (environmentId: string, reason: 'expired' | 'dead' | 'closed') => void;
  /** A start failed (the error is also the rejection of the oldest waiting claim, if any). */
  failed: (error: unknown) => void;
}

/**
 * Started sandboxes of one spec, kept ready (Backend.pool). A claimed environment is the caller's,
 * exactly like one from backend.start(spec): tear it down when done. `await using` closes the pool.
 */
export interface EnvironmentPool extends AsyncDisposable {
  readonly backend: string;
  readonly spec: EnvironmentSpec;
  readonly size: number;
  readonly stats: Readonly<PoolStats>;
  readonly events: TypedEvents<PoolEvents>;
  /**
   * A running sandbox: an idle one, checked alive first (a dead one is removed and the next tried),
   * or the next to start. Rejects with the start's own error when the start meant for it fails,
   * with CancelledError on `signal` or when the pool is closed while it waits.
   */
  claim(opts?: { signal?: AbortSignal }): Promise<ClaimedEnvironment>;
  /** Resolves once `size` sandboxes are idle; rejects with a start's error if one fails meanwhile. */
  fill(opts?: { signal?: AbortSignal }): Promise<void>;
  /** Rejects waiting claims, removes every sandbox the pool holds (waiting for starts in flight). Idempotent. */
  close(): Promise<void>;
}

export type { EnvironmentSpec, EnvironmentSpecInput, ImageAuth };
