import { createEvents } from '../events.js';
import { cancelledFrom, linkSignals, raceAbort, throwIfAborted } from '../abort.js';
import type {
  Capabilities,
  DownloadDirOptions,
  Environment,
  EnvironmentEvents,
  EnvironmentPhase,
  ExecOptions,
  ExecResult,
  NetworkMode,
  AllowlistEnforcement,
  Snapshot,
  StartupEvent,
  TeardownResult,
  TransferOptions,
  TransferStats,
} from '../contract.js';
import { BackendUnavailableError, BerthError, CancelledError, ConfigError, StartupTimeoutError, type Operation } from '../errors.js';
import { NEVER_CREATED } from '../contract.js';
import { LABEL_SNAPSHOT_OF, sandboxLabels } from '../labels.js';
import { DEFAULT_BUILD_TIMEOUT_MS } from '../build-spec.js';
import { DEFAULT_STARTUP_MS, isBuiltImage, type EnvironmentSpec } from '../spec.js';
import { refuseExecTty, refuseExecUser, refuseNetwork, type CapabilityHints } from './capabilities.js';
import { NetworkSchema, sameNetwork } from '../spec.js';
import { throttledStatus, type CreationLimiter } from './creation-limiter.js';
import { DOWNLOAD_DIR_OPTIONS, EXEC_OPTIONS, TRANSFER_OPTIONS } from './call-options.js';
import { checkOptionNames } from './option-names.js';
import { execArgv, runProcess } from './run-process.js';
import { LOSS_SETTLE_MS, SandboxHealth } from './sandbox-health.js';
import { SandboxRemoval } from './sandbox-removal.js';
import { Transfers, type TransferMode } from './transfers.js';
import { launchAsUser } from './user-launcher.js';
import { StartupLog } from './startup-log.js';
import { StartClock, observeSpawns } from './start-clock.js';
import type { StartTimings } from '../start-timings.js';
import { takeSnapshot } from './take-snapshot.js';
import { DetachedProcesses } from './detached-processes.js';
import { PortForwards } from './port-forwards.js';
import type { PortForward } from '../ports.js';
import type { AttachOptions, ProcessInfo, SpawnedProcess, SpawnOptions } from '../processes.js';
import type { SandboxTransport, StartProgress } from './transport.js';

export interface SandboxEnvironmentOptions {
  /** The backend's name, as errors report it. */
  backend: string;
  id: string;
  spec: EnvironmentSpec;
  transport: SandboxTransport;
  /** The backend's own labels, merged under berth's. */
  labels?: Readonly<Record<string, string>>;
  /** Shared by every environment of one backend instance. */
  limiter?: CreationLimiter;
  /** 'native' uses the transport's archive API when it has one (the default); 'exec' forces tar over exec. */
  transfers?: TransferMode;
  /**
   * The backend's capabilities (pass `backend.capabilities`): exec options needing one it does not
   * claim (`opts.tty`, `opts.user` other than root) are refused with a CapabilityError. Omitted:
   * none of those is claimed.
   */
  capabilities?: Partial<Pick<Capabilities, 'tty' | 'execUser' | 'snapshot' | 'networkModes' | 'networkAllowlist' | 'networkSwitch'>>;
  /** What the backend says instead of a capability it lacks (for snapshot's CapabilityError). */
  hints?: CapabilityHints;
  /** Called before each sandbox creation (defineBackend starts the backend's guardian at the first). */
  beforeCreate?: () => void;
  /**
   * A warm pool's sandbox: `timeouts.lifetimeMs` counts from `claimed()`, not from the start (the
   * transport's engine deadline is the backstop, set later by the pool's maxIdleMs).
   */
  pooled?: boolean;
}

/**
 * A command whose end the backend never reported (its stream just ended) is most often a sandbox
 * being killed whose status lags (a pod's deadline: the kubelet kills first and reports after, by
 * seconds on a busy node): waited for longer before it is called the backend's failure.
 */
const UNKNOWN_EXIT_SETTLE_MS = 5000;
/** The 'stopped' phase's detail when teardown had nothing to remove. */
export { NEVER_CREATED } from '../contract.js';

/**
 * A full `Environment` over a backend's `SandboxTransport`: the lifecycle (phases, a startup
 * deadline that covers hung calls, idempotent and retryable teardown, lifetime expiry), exec
 * semantics, transfers, and the classification of every failure. `defineBackend` makes one per
 * `environment(spec)`; see the "Writing a backend" section of @berth/core's README.
 */
export class SandboxEnvironment implements Environment {
  readonly id: string;
  readonly backend: string;
  readonly spec: EnvironmentSpec;
  readonly events = createEvents<EnvironmentEvents>();
  readonly #transport: SandboxTransport;
  readonly #options: SandboxEnvironmentOptions;
  readonly #transfers: Transfers;
  /** spawn(), attach(), processes(): on this sandbox's exec, for every backend. */
  readonly #processes = new DetachedProcesses(
    (command, opts) => this.exec(command, opts),
    () => ({ backend: this.backend, environmentId: this.id }),
  );
  /** port(): local listeners relayed over exec, closed at teardown. */
  readonly #ports = new PortForwards((command, opts) => this.exec(command, opts));
  /** Whether there is a sandbox to remove, and its removal (see SandboxRemoval for the rule). */
  readonly #removal: SandboxRemoval;
  #phase: EnvironmentPhase = 'created';
  #starting: Promise<void> | undefined;
  #teardown: Promise<TeardownResult> | undefined;
  /** Whether the sandbox lives, and how its end is named. */
  readonly #health: SandboxHealth;
  /** teardown() was called: no operation may start, whatever came of the removal. */
  #closed = false;
  #network: NetworkMode;
  /** A pooled sandbox's start, as its events told it, until the claim. */
  #startup: StartupLog | undefined;
  /** A pooled sandbox's lifetime, armed at its claim. */
  #lifetimeTimer: NodeJS.Timeout | undefined;
  /** The removal that timer started, which teardown waits for. */
  #expiring: Promise<void> | undefined;
  /** When the start reached each mark (startTimings). */
  readonly #clock: StartClock;

  constructor(options: SandboxEnvironmentOptions) {
    this.id = options.id;
    this.backend = options.backend;
    this.spec = options.spec;
    this.#network = options.spec.network;
    this.#clock = new StartClock(this.events);
    // Every process the kit starts goes through here: the first after running is 'firstCommand'.
    this.#transport = observeSpawns(options.transport, () => this.#clock.reach('firstCommand'));
    this.#options = options;
    this.#removal = new SandboxRemoval(options.transport);
    this.#health = new SandboxHealth({
      id: this.id,
      backend: this.backend,
      spec: this.spec,
      transport: this.#transport,
      closed: () => this.#closed,
      onLost: (reason) => {
        this.#setPhase('lost', reason);
        this.events.emit('lost', reason);
      },
    });
    if (options.pooled) this.#startup = new StartupLog(this.events);
    this.#transfers = new Transfers(this.#transport, options.transfers ?? 'native', {
      ctx: (op) => this.#ctx(op),
      ensureUsable: (op) => this.#usable(op),
      checkAlive: (op) => this.#health.checkAlive(op),
      closed: () => this.#closed,
      interrupted: (op, cause) => this.#interruptedByTeardown(op, cause),
    });
  }

  get phase(): EnvironmentPhase {
    return this.#phase;
  }

  get startTimings(): StartTimings | undefined {
    return this.#clock.timings;
  }

  #setPhase(phase: EnvironmentPhase, detail?: string): void {
    this.#phase = phase;
    this.events.emit('phase', phase, detail);
  }

  #ctx(operation: Operation) {
    return { operation, backend: this.backend, environmentId: this.id };
  }

  // ----------------------------------------------------------------------------- lifecycle

  start(opts: { signal?: AbortSignal } = {}): Promise<void> {
    if (this.#closed) return Promise.reject(this.#tornDown('start'));
    this.#clock.begin();
    this.#starting ??= this.#start(opts.signal);
    return this.#starting;
  }

  async #start(signal: AbortSignal | undefined): Promise<void> {
    // A build has its own timeout; the startup deadline covers what comes after it too.
    const image = this.spec.image;
    const buildMs = isBuiltImage(image) ? (image.build.timeoutMs ?? DEFAULT_BUILD_TIMEOUT_MS) : 0;
    const timeoutMs = (this.spec.timeouts.startupMs ?? DEFAULT_STARTUP_MS) + buildMs;
    // The caller's signal and a deadline of our own, both cut below (AbortSignal.timeout cannot be).
    // The deadline counts from the creation slot: a start queued behind the backend's creation
    // limits is not the sandbox being slow (the caller's own signal covers the queue).
    const stop = linkSignals(signal);
    let timedOut = false;
    let timer: NodeJS.Timeout | undefined;
    let settled = false;
    const admitted = () => {
      if (settled) return;
      this.#clock.reach('admitted');
      timer = setTimeout(() => {
        timedOut = true;
        stop.abort(new Error(`startup deadline of ${timeoutMs} ms`));
      }, timeoutMs);
    };
    let lastStatus = 'created';
    // A transport still reporting after start() has given up must not move the phase back.
    const progress = (update: StartProgress) => {
      if (settled) return;
      if (update.status) lastStatus = update.status;
      if (update.reached) this.#clock.reach(update.reached);
      if (update.phase) this.#setPhase(update.phase);
      if (update.pull) this.events.emit('pull', update.pull);
      if (update.build) this.events.emit('build', update.build);
      if (update.throttled) this.#throttled(update.throttled, (why) => (lastStatus = why));
    };
    const labels = sandboxLabels(this.id, this.spec.labels, this.#options.labels);
    const create = () => {
      admitted();
      this.#options.beforeCreate?.();
      return this.#removal.create({
        labels,
        signal: stop.signal,
        progress,
        notify: (notice) => this.events.emit('network', notice),
        lost: (reason) => this.#health.markLost(reason),
      });
    };
    const limiter = this.#options.limiter;
    const work = (async () => {
      throwIfAborted(signal, this.#ctx('start'));
      await (limiter ? limiter.run(create, stop.signal, (why) => progress({ status: why })) : create());
    })();
    try {
      await raceAbort(work, stop.signal);
      this.#clock.reach('running');
      this.#setPhase('running');
    } catch (error) {
      settled = true;
      this.#setPhase('failed', error instanceof Error ? error.message : String(error));
      await this.#removal.afterFailedStart(work);
      if (signal?.aborted) throw cancelledFrom(signal, this.#ctx('start'));
      const mapped = BerthError.isInstance(error) ? error : (this.#transport.mapError(error, 'start') ?? error);
      // Out of time: unless the failure was already a definite, permanent one, say so.
      const definite = BerthError.isInstance(mapped) && !CancelledError.isInstance(mapped) && mapped.category === 'permanent_infra';
      if (timedOut && !definite) {
        throw new StartupTimeoutError({
          ...this.#ctx('start'),
          timeoutMs,
          lastStatus,
          message: `sandbox did not start within ${timeoutMs} ms (last status: ${lastStatus})`,
          cause: error,
        });
      }
      throw mapped;
    } finally {
      settled = true;
      clearTimeout(timer);
      stop.dispose();
    }
  }

  /**
   * The engine throttled this start's create: the backend's limiter holds back every start for the
   * pause it asked for, and a phase event (the phase it is in, 'starting' at least) says so, as
   * does lastStatus, so a user sees why starts queue.
   */
  #throttled(throttled: { retryAfterMs?: number }, said: (why: string) => void): void {
    const waitMs = this.#options.limiter?.throttled(throttled.retryAfterMs) ?? throttled.retryAfterMs;
    const why = waitMs === undefined ? 'throttled by the engine' : throttledStatus(waitMs);
    said(why);
    this.#setPhase(this.#phase === 'created' ? 'starting' : this.#phase, why);
  }

  async teardown(opts: { signal?: AbortSignal } = {}): Promise<TeardownResult> {
    this.#closed = true;
    clearTimeout(this.#lifetimeTimer);
    await this.#ports.closeAll();
    this.#teardown ??= (async () => {
      // Let an in-flight start finish (or fail) first, so its sandbox is not left behind.
      if (this.#starting) await this.#starting.catch(() => undefined);
      await this.#expiring;
      this.#setPhase('stopping');
      const map = (error: unknown) => (BerthError.isInstance(error) ? error : (this.#transport.mapError(error, 'teardown') ?? error));
      const removed = await this.#removal.remove(map, opts.signal);
      this.#setPhase('stopped', removed ? undefined : NEVER_CREATED);
      return { removed };
    })();
    try {
      return await this.#teardown;
    } catch (error) {
      // The backend failed to remove it (a restart, a 500): let a later teardown() try again.
      this.#teardown = undefined;
      throw error;
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.teardown();
  }

  // ----------------------------------------------------------------------------- state checks

  #tornDown(operation: Operation): ConfigError {
    return new ConfigError({ ...this.#ctx(operation), message: `environment ${this.id} was torn down; ${operation} needs a new environment` });
  }

  #usable(operation: Operation): void {
    if (this.#closed) throw this.#tornDown(operation);
    const lost = this.#health.lostReason;
    if (lost) throw this.#health.lost(operation, lost);
    if (this.#phase !== 'running') {
      throw new ConfigError({ ...this.#ctx(operation), message: `environment ${this.id} is not running (phase ${this.#phase}): call start() first` });
    }
  }

  /** teardown() ran while an operation was in flight: the caller's own doing, so cancelled. */
  #interruptedByTeardown(operation: Operation, cause?: unknown): CancelledError {
    return new CancelledError({ ...this.#ctx(operation), message: `environment ${this.id} was torn down while ${operation} was running`, cause });
  }

  // ----------------------------------------------------------------------------- warm pools

  /**
   * Is the started sandbox still running? One status read, what a pool asks before a claim; a dead
   * one is marked lost. False also when it is not running for any other reason (never started,
   * torn down).
   */
  async probe(): Promise<boolean> {
    if (this.#phase !== 'running' || this.#closed) return false;
    try {
      return (await this.#health.checkAlive('start')) === undefined;
    } catch {
      return false;
    }
  }

  /** A pooled sandbox's start as its events told it before the claim (pull and build progress), for the claimer to replay. */
  get startup(): readonly StartupEvent[] {
    return this.#startup?.events ?? [];
  }

  /** A pool handed this sandbox out: from now its `timeouts.lifetimeMs` runs, enforced by the kit. */
  claimed(): void {
    this.#startup?.close();
    const lifetime = this.spec.timeouts.lifetimeMs;
    if (!this.#options.pooled || lifetime === undefined || this.#closed) return;
    this.#lifetimeTimer = setTimeout(() => {
      // What the engine does at a deadline: end the sandbox, and let the operations in flight find out.
      this.#expiring = this.#transport.remove().catch(() => undefined);
      this.#health.expire(`reached its lifetime of ${lifetime} ms (timeouts.lifetimeMs) since its claim from a warm pool`);
    }, lifetime);
    this.#lifetimeTimer.unref();
  }

  // ----------------------------------------------------------------------------- exec

  async exec(command: string | readonly string[], opts: ExecOptions = {}): Promise<ExecResult> {
    this.#checkOptions(opts, EXEC_OPTIONS, 'exec', 'exec');
    this.#usable('exec');
    const argv = execArgv(command, opts, this.#ctx('exec'), this.spec.env);
    refuseExecTty(opts.tty, { tty: this.#options.capabilities?.tty === true }, this.#ctx('exec'));
    if (this.#options.capabilities?.execUser !== true) refuseExecUser(opts.user, this.#ctx('exec'), 'it does not claim the execUser capability');
    throwIfAborted(opts.signal, this.#ctx('exec'));
    // An engine whose exec has no user: the launcher switches inside the sandbox.
    const launched = opts.user !== undefined && this.#transport.nativeUser !== true ? launchAsUser(argv, opts.user, { ...this.spec.env, ...opts.env }) : argv;
    let outcome;
    try {
      outcome = await runProcess(this.#transport, launched, opts, this.#ctx('exec'));
    } catch (error) {
      if (this.#closed) throw this.#interruptedByTeardown('exec', error);
      throw await this.#health.mapError(error, 'exec');
    }
    if (this.#closed) throw this.#interruptedByTeardown('exec');
    // A failed command in a sandbox that can be replaced under its name (was it still the same
    // one?), or one with services (did one of them end under it?): asked once.
    const failed = outcome.result.exitCode !== 0 && (this.#transport.replaceable === true || Object.keys(this.spec.services).length > 0);
    if (outcome.suspicious || outcome.cancelled || failed) {
      // Killed by a signal from outside (137/143) or cut off: give the backend a moment to agree.
      const code = outcome.result.exitCode;
      const settle = outcome.exitUnknown ? UNKNOWN_EXIT_SETTLE_MS : code === 137 || code === 143 || code < 0 ? LOSS_SETTLE_MS : 0;
      const lost = await this.#health.checkAlive('exec', settle);
      if (lost) throw lost;
    }
    if (outcome.cancelled) throw cancelledFrom(opts.signal!, this.#ctx('exec'));
    // Alive, yet the backend never said how the command ended: that is the backend's failure, not
    // an exit code for the task to be judged by. (A timeout is still the task's: it ran too long.)
    if (outcome.exitUnknown && !outcome.result.timedOut) {
      throw new BackendUnavailableError({ ...this.#ctx('exec'), message: `the ${this.backend} backend never reported how the command ended in ${this.id}` });
    }
    return outcome.result;
  }

  // ----------------------------------------------------------------------------- detached processes

  spawn(command: string | readonly string[], opts?: SpawnOptions): Promise<SpawnedProcess> {
    return this.#processes.spawn(command, opts);
  }

  attach(id: string, opts?: AttachOptions): Promise<SpawnedProcess> {
    return this.#processes.attach(id, opts);
  }

  processes(): Promise<ProcessInfo[]> {
    return this.#processes.list();
  }

  async port(port: number): Promise<PortForward> {
    this.#usable('exec');
    return this.#ports.open(port, { backend: this.backend, environmentId: this.id });
  }

  // ----------------------------------------------------------------------------- network

  async setNetwork(mode: NetworkMode): Promise<void> {
    this.#usable('network');
    const ctx = this.#ctx('network');
    const parsed = NetworkSchema.safeParse(mode);
    if (!parsed.success) {
      const entry = parsed.error.issues.flatMap((i) => (i.code === 'invalid_union' ? i.errors.flat() : [i])).find((i) => i.code === 'custom');
      throw new ConfigError({
        ...ctx,
        path: 'mode',
        message: entry
          ? `setNetwork: ${entry.message.replace(/^network\./, 'mode.')}`
          : `setNetwork: mode is 'public', 'none' or { allow: [...] }; got ${typeof mode === 'string' ? `'${mode}'` : typeof mode}`,
        cause: parsed.error,
      });
    }
    const next = parsed.data;
    if (!this.spec.networkSwitch || !this.#transport.setNetwork) {
      throw new ConfigError({
        ...ctx,
        path: 'spec.networkSwitch',
        message: `environment ${this.id} was not created to switch networks: start it with networkSwitch: true`,
      });
    }
    // What the backend cannot enforce is refused before it is asked, as at environment().
    const capabilities = this.#options.capabilities;
    if (capabilities?.networkModes && capabilities.networkAllowlist !== undefined) {
      refuseNetwork(
        next,
        { networkModes: capabilities.networkModes, networkAllowlist: capabilities.networkAllowlist },
        this.backend,
        this.#options.hints ?? {},
        'mode',
      );
    }
    if (sameNetwork(next, this.#network)) return;
    try {
      await this.#transport.setNetwork(next);
    } catch (error) {
      throw await this.#health.mapError(error, 'network');
    }
    this.#network = next;
  }

  get networkEnforcement(): { allowlist: AllowlistEnforcement | undefined; switches: boolean } {
    const allowlist = this.#options.capabilities?.networkAllowlist;
    return { allowlist: allowlist || undefined, switches: this.spec.networkSwitch && this.#options.capabilities?.networkSwitch === true };
  }

  get network(): NetworkMode {
    return this.#network;
  }

  // ----------------------------------------------------------------------------- snapshots

  snapshot(opts: { signal?: AbortSignal } = {}): Promise<Snapshot> {
    try {
      this.#usable('snapshot');
    } catch (error) {
      return Promise.reject(error);
    }
    return takeSnapshot({
      transport: this.#transport,
      claimed: this.#options.capabilities?.snapshot === true,
      ...(this.#options.hints?.snapshot ? { hint: this.#options.hints.snapshot } : {}),
      ctx: this.#ctx('snapshot'),
      labels: sandboxLabels(this.id, this.#options.labels, { [LABEL_SNAPSHOT_OF]: this.id }),
      ...(opts.signal ? { signal: opts.signal } : {}),
      mapError: (error) => this.#health.mapError(error, 'snapshot'),
    });
  }

  // ----------------------------------------------------------------------------- transfers

  async uploadFile(localPath: string, remotePath: string, opts: TransferOptions = {}): Promise<void> {
    this.#checkOptions(opts, TRANSFER_OPTIONS, 'uploadFile', 'upload');
    return this.#transfers.uploadFile(localPath, remotePath, opts);
  }

  async uploadDir(localDir: string, remoteDir: string, opts: TransferOptions = {}): Promise<TransferStats> {
    this.#checkOptions(opts, TRANSFER_OPTIONS, 'uploadDir', 'upload');
    return this.#transfers.uploadDir(localDir, remoteDir, opts);
  }

  async downloadFile(remotePath: string, localPath: string, opts: TransferOptions = {}): Promise<void> {
    this.#checkOptions(opts, TRANSFER_OPTIONS, 'downloadFile', 'download');
    return this.#transfers.downloadFile(remotePath, localPath, opts);
  }

  async downloadDir(remoteDir: string, localDir: string, opts: DownloadDirOptions = {}): Promise<TransferStats> {
    this.#checkOptions(opts, DOWNLOAD_DIR_OPTIONS, 'downloadDir', 'download');
    return this.#transfers.downloadDir(remoteDir, localDir, opts);
  }

  /** A misspelt option is refused (ConfigError naming it and what was meant), never ignored. */
  #checkOptions(opts: object, known: readonly string[], call: string, operation: Operation): void {
    checkOptionNames(opts, known, { what: call, path: 'opts', operation, backend: this.backend });
  }
}
