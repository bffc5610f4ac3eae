import { linkSignals } from '../abort.js';
import type {
  DownloadDirOptions,
  Environment,
  EnvironmentEvents,
  EnvironmentPhase,
  EnvironmentPool,
  ExecOptions,
  ExecResult,
  NetworkMode,
  Snapshot,
  TeardownResult,
  TransferOptions,
  TransferStats,
} from '../contract.js';
import type { AttachOptions, ProcessInfo, SpawnedProcess, SpawnOptions } from '../processes.js';
import type { PortForward } from '../ports.js';
import { NEVER_CREATED } from '../contract.js';
import { ConfigError, type Operation } from '../errors.js';
import { createEvents } from '../events.js';

import type { EnvironmentSpec } from '../spec.js';
import type { StartTimings } from '../start-timings.js';

const FORWARDED = ['phase', 'pull', 'build', 'lost', 'network', 'reached'] as const;

/**
 * An environment whose start() is a claim from a warm pool (pooled()). Until the claim its id is
 * provisional (the pool's sandbox has its own); after it, everything is the claimed sandbox's.
 */
export class PooledEnvironment implements Environment {
  readonly backend: string;
  readonly spec: EnvironmentSpec;
  readonly events = createEvents<EnvironmentEvents>();
  readonly #provisionalId: string;
  readonly #pool: () => EnvironmentPool;
  readonly #stop = new AbortController();
  #inner: Environment | undefined;
  #phase: EnvironmentPhase = 'created';
  #starting: Promise<void> | undefined;
  #teardown: Promise<TeardownResult> | undefined;
  #closed = false;

  /** As the backend's environment says (a pool's sandboxes are that backend's). */
  readonly networkEnforcement: Environment['networkEnforcement'];

  constructor(options: {
    backend: string;
    id: string;
    spec: EnvironmentSpec;
    networkEnforcement: Environment['networkEnforcement'];
    pool: () => EnvironmentPool;
  }) {
    this.backend = options.backend;
    this.networkEnforcement = options.networkEnforcement;
    this.spec = options.spec;
    this.#provisionalId = options.id;
    this.#pool = options.pool;
  }

  get id(): string {
    return this.#inner?.id ?? this.#provisionalId;
  }

  get phase(): EnvironmentPhase {
    return this.#inner?.phase ?? this.#phase;
  }

  get network(): NetworkMode {
    return this.#inner?.network ?? this.spec.network;
  }

  /** The claimed sandbox's own start (made for the pool, before the claim); undefined until the claim. */
  get startTimings(): StartTimings | undefined {
    return this.#inner?.startTimings;
  }

  #setPhase(phase: EnvironmentPhase, detail?: string): void {
    this.#phase = phase;
    this.events.emit('phase', phase, detail);
  }

  start(opts: { signal?: AbortSignal } = {}): Promise<void> {
    if (this.#closed) return Promise.reject(this.#tornDown('start'));
    this.#starting ??= (async () => {
      const link = linkSignals(opts.signal, this.#stop.signal);
      this.#setPhase('starting');
      try {
        const inner = await this.#pool().claim({ signal: link.signal });
        if (this.#closed) {
          await inner.teardown().catch(() => undefined);
          throw this.#tornDown('start');
        }
        const emit = this.events.emit.bind(this.events) as (name: string, ...args: unknown[]) => boolean;
        // What the sandbox's start reported before this claim (its pull, its build), then 'running':
        // every pool says it (ClaimedEnvironment.startup), whichever backend made it.
        for (const event of inner.startup) emit(event.name, event.progress);
        this.#inner = inner;
        for (const name of FORWARDED) inner.events.on(name, (...args: unknown[]) => emit(name, ...args));
        this.events.emit('phase', 'running');
      } catch (error) {
        this.#setPhase('failed', error instanceof Error ? error.message : String(error));
        throw error;
      } finally {
        link.dispose();
      }
    })();
    return this.#starting;
  }

  teardown(opts: { signal?: AbortSignal } = {}): Promise<TeardownResult> {
    this.#closed = true;
    this.#stop.abort(new Error('torn down while its claim waited'));
    this.#teardown ??= (async () => {
      if (this.#starting) await this.#starting.catch(() => undefined);
      if (this.#inner) return this.#inner.teardown(opts);
      this.#setPhase('stopping');
      this.#setPhase('stopped', NEVER_CREATED);
      return { removed: false };
    })();
    return this.#teardown;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.teardown().then(() => undefined);
  }

  #tornDown(operation: Operation): ConfigError {
    return new ConfigError({
      operation,
      backend: this.backend,
      environmentId: this.id,
      message: `environment ${this.id} was torn down; ${operation} needs a new environment`,
    });
  }

  /** The claimed sandbox, or the error the kit gives an environment that has not started. */
  #ready(operation: Operation): Environment {
    if (this.#inner) return this.#inner;
    if (this.#closed) throw this.#tornDown(operation);
    throw new ConfigError({
      operation,
      backend: this.backend,
      environmentId: this.id,
      message: `environment ${this.id} is not running (phase ${this.phase}): call start() first`,
    });
  }

  async exec(command: string | readonly string[], opts?: ExecOptions): Promise<ExecResult> {
    return this.#ready('exec').exec(command, opts);
  }
  spawn(command: string | readonly string[], opts?: SpawnOptions): Promise<SpawnedProcess> {
    return this.#ready('exec').spawn(command, opts);
  }

  attach(id: string, opts?: AttachOptions): Promise<SpawnedProcess> {
    return this.#ready('exec').attach(id, opts);
  }

  processes(): Promise<ProcessInfo[]> {
    return this.#ready('exec').processes();
  }

  port(port: number): Promise<PortForward> {
    return this.#ready('exec').port(port);
  }

  async snapshot(opts?: { signal?: AbortSignal }): Promise<Snapshot> {
    return this.#ready('snapshot').snapshot(opts);
  }

  async setNetwork(mode: NetworkMode): Promise<void> {
    return this.#ready('network').setNetwork(mode);
  }

  async uploadFile(localPath: string, remotePath: string, opts?: TransferOptions): Promise<void> {
    return this.#ready('upload').uploadFile(localPath, remotePath, opts);
  }

  async uploadDir(localDir: string, remoteDir: string, opts?: TransferOptions): Promise<TransferStats> {
    return this.#ready('upload').uploadDir(localDir, remoteDir, opts);
  }

  async downloadFile(remotePath: string, localPath: string, opts?: TransferOptions): Promise<void> {
    return this.#ready('download').downloadFile(remotePath, localPath, opts);
  }

  async downloadDir(remoteDir: string, localDir: string, opts?: DownloadDirOptions): Promise<TransferStats> {
    return this.#ready('download').downloadDir(remoteDir, localDir, opts);
  }
}
