import { hostname } from 'node:os';
import type Docker from 'dockerode';
import { EventEmitter } from 'eventemitter3';
import {
  BackendUnavailableError,
  BerthError,
  CancelledError,
  ConfigError,
  DEFAULT_STARTUP_MS,
  ImagePullError,
  LABEL_CREATED,
  LABEL_ENVIRONMENT,
  LABEL_MANAGED,
  LABEL_OWNER_HOST,
  LABEL_OWNER_PID,
  LABEL_SESSION,
  SESSION_ID,
  SandboxLostError,
  StartupTimeoutError,
  TaskFailure,
  TransferError,
  UnexpectedEntryError,
  UnsafeEntryError,
  cancelledFrom,
  extractDirectory,
  extractSingleFile,
  packDirectory,
  packFile,
  throwIfAborted,
  type Environment,
  type EnvironmentEvents,
  type EnvironmentPhase,
  type EnvironmentSpec,
  type ExecOptions,
  type ExecResult,
  type ImageAuth,
  type ImageRef,
  type MirroredImage,
  type Operation,
  type TransferOptions,
  type TransferStats,
} from '@berth/core';
import { dockerMessage, isContainerGone, mapDaemonError, mapEnvironmentError, statusOf } from './docker-errors.js';
import { runExec } from './exec.js';
import type { DockerBackendOptions } from './options.js';
import { pullImage, resolveDockerAuth } from './pull.js';

const BACKEND = 'docker';
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** PID 1 of every sandbox: sleeps until killed, or until the spec's lifetime runs out. */
function initCommand(lifetimeMs: number | undefined): string[] {
  const body =
    lifetimeMs === undefined
      ? 'while :; do sleep 86400 & wait $!; done'
      : `sleep ${Math.ceil(lifetimeMs / 1000)} & wait $!`;
  return ['/bin/sh', '-c', `trap 'exit 0' TERM INT; ${body}`];
}

export class DockerEnvironment implements Environment {
  readonly id: string;
  readonly backend = BACKEND;
  readonly spec: EnvironmentSpec;
  readonly events = new EventEmitter<EnvironmentEvents>();
  readonly #docker: Docker;
  readonly #options: DockerBackendOptions;
  readonly #image: ImageRef;
  readonly #pullAuth: ImageAuth | undefined;
  #phase: EnvironmentPhase = 'created';
  #container: Docker.Container | undefined;
  #starting: Promise<void> | undefined;
  #teardown: Promise<void> | undefined;
  #lostReason: string | undefined;
  #lifetimeExceeded = false;
  /** teardown() was called: no operation may start, whatever came of the removal. */
  #closed = false;

  constructor(docker: Docker, options: DockerBackendOptions, spec: EnvironmentSpec, id: string, pull: MirroredImage) {
    this.#docker = docker;
    this.#options = options;
    this.spec = spec;
    this.id = id;
    this.#image = pull.image;
    this.#pullAuth = pull.auth;
  }

  get phase(): EnvironmentPhase {
    return this.#phase;
  }

  #setPhase(phase: EnvironmentPhase, detail?: string): void {
    this.#phase = phase;
    this.events.emit('phase', phase, detail);
  }

  #ctx(operation: Operation) {
    return { operation, backend: BACKEND, environmentId: this.id };
  }

  // ----------------------------------------------------------------------------- lifecycle

  start(opts: { signal?: AbortSignal } = {}): Promise<void> {
    if (this.#closed) return Promise.reject(this.#tornDown('start'));
    this.#starting ??= this.#start(opts.signal);
    return this.#starting;
  }

  async #start(signal: AbortSignal | undefined): Promise<void> {
    const timeoutMs = this.spec.timeouts.startupMs ?? DEFAULT_STARTUP_MS;
    const controller = new AbortController();
    let lastStatus = 'created';
    const timer = setTimeout(() => controller.abort(new Error('startup timeout')), timeoutMs);
    const onAbort = () => controller.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    // Engine calls that hang must not hold start() past its deadline: race them with the abort.
    const aborted = new Promise<never>((_, reject) => {
      controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true });
    });
    aborted.catch(() => undefined);
    const work = (async () => {
      throwIfAborted(signal, this.#ctx('start'));
      await this.#ensureImage(controller.signal, (s) => (lastStatus = s));
      lastStatus = 'creating container';
      this.#setPhase('starting');
      await this.#createAndRun(controller.signal);
    })();
    try {
      await Promise.race([work, aborted]);
      this.#setPhase('running');
    } catch (error) {
      this.#setPhase('failed', error instanceof Error ? error.message : String(error));
      // The work may still create the container after we gave up: remove it once it settles.
      await Promise.race([work.catch(() => undefined), new Promise((r) => setTimeout(r, 5000))]);
      await this.#removeContainer().catch(() => undefined);
      if (signal?.aborted) throw cancelledFrom(signal, this.#ctx('start'));
      // Out of time: unless the failure was already a definite, permanent one, say so.
      const definite = BerthError.isInstance(error) && !CancelledError.isInstance(error) && error.category === 'permanent_infra';
      if (controller.signal.aborted && !definite) {
        throw new StartupTimeoutError({
          ...this.#ctx('start'),
          timeoutMs,
          lastStatus,
          message: `sandbox did not start within ${timeoutMs} ms (last status: ${lastStatus})`,
          cause: error,
        });
      }
      throw error;
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  async #imagePresent(ref: string): Promise<boolean> {
    try {
      await this.#docker.getImage(ref).inspect();
      return true;
    } catch (error) {
      if (statusOf(error) === 404) return false;
      throw mapDaemonError(error, this.#ctx('pull')) ?? error;
    }
  }

  async #ensureImage(signal: AbortSignal, status: (s: string) => void): Promise<void> {
    const ref = this.#image.canonical;
    const policy = this.#options.pullPolicy ?? 'if-missing';
    if (policy !== 'always' && (await this.#imagePresent(ref))) return;
    if (policy === 'never') {
      throw new ImagePullError({
        ...this.#ctx('pull'),
        image: this.#image.original,
        reason: 'not_found',
        message: `image ${this.#image.original} is not present locally and pullPolicy is 'never'`,
      });
    }
    status(`pulling ${this.#image.original}`);
    this.#setPhase('pulling');
    const auth = await resolveDockerAuth(this.#image, this.#pullAuth, this.#options, this.#ctx('pull'));
    await pullImage(this.#docker, ref, auth, {
      ...this.#ctx('pull'),
      signal,
      onProgress: (p) => {
        if (p.total) status(`pulling ${this.#image.original}: ${p.status} ${Math.round(((p.current ?? 0) / p.total) * 100)}%`);
        this.events.emit('pull', p);
      },
    });
    // A pull cut short by the daemon can "finish" without the image: check.
    if (!(await this.#imagePresent(ref))) {
      throw new ImagePullError({
        ...this.#ctx('pull'),
        image: this.#image.original,
        reason: 'transient',
        message: `pull of ${this.#image.original} ended without the image being present`,
      });
    }
  }

  async #createAndRun(signal: AbortSignal): Promise<void> {
    const { resources, network, env, workdir, labels, mounts, timeouts } = this.spec;
    // Mounts, not Binds: Binds silently creates a missing host path as an empty directory.
    const binds: Docker.MountSettings[] = mounts
      .filter((m) => m.type === 'bind')
      .map((m) => ({ Type: 'bind', Source: m.source, Target: m.target, ReadOnly: m.readOnly }));
    const allLabels: Record<string, string> = {
      ...labels,
      ...this.#options.labels,
      [LABEL_MANAGED]: 'true',
      [LABEL_SESSION]: SESSION_ID,
      [LABEL_ENVIRONMENT]: this.id,
      [LABEL_CREATED]: String(Date.now()),
      [LABEL_OWNER_PID]: String(process.pid),
      [LABEL_OWNER_HOST]: hostname(),
    };
    const hostConfig: Docker.HostConfig = {
      Init: this.#options.init ?? false,
      ...(network === 'none' ? { NetworkMode: 'none' } : {}),
      ...(resources.cpus ? { NanoCpus: Math.round(resources.cpus * 1e9) } : {}),
      ...(resources.memoryMb ? { Memory: resources.memoryMb * 1024 * 1024 } : {}),
      ...(binds.length ? { Mounts: binds } : {}),
    };
    try {
      this.#container = await this.#docker.createContainer({
        name: this.id,
        Image: this.#image.canonical,
        Entrypoint: [],
        Cmd: initCommand(timeouts.lifetimeMs),
        Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
        ...(workdir ? { WorkingDir: workdir } : {}),
        Labels: allLabels,
        HostConfig: hostConfig,
        ...(network === 'none' ? { NetworkDisabled: true } : {}),
      });
      throwIfAborted(signal, this.#ctx('start'));
      await this.#container.start();
      throwIfAborted(signal, this.#ctx('start'));
      const info = await this.#container.inspect();
      if (!info.State.Running) {
        const logs = await this.#container.logs({ stdout: true, stderr: true, tail: 20 }).catch(() => Buffer.alloc(0));
        throw new ConfigError({
          ...this.#ctx('start'),
          path: 'spec.image',
          message: `sandbox exited right after starting (${info.State.Status}, exit ${info.State.ExitCode}): berth needs /bin/sh in the image. Output: ${logs.toString('utf8').replace(/[\x00-\x08]/g, '').slice(-500)}`,
        });
      }
    } catch (error) {
      // Deterministic refusals first: the engine reports some of them as 500s.
      throw this.#startError(error) ?? mapDaemonError(error, this.#ctx('start')) ?? error;
    }
  }

  /** Start failures that say the spec or image is wrong: permanent, with the fix in the message. */
  #startError(error: unknown): BerthError | undefined {
    if (BerthError.isInstance(error)) return error;
    const message = dockerMessage(error);
    const config = (path: string, text: string) => new ConfigError({ ...this.#ctx('start'), path, message: text, cause: error });
    if (/bind source path does not exist|invalid mount config/i.test(message)) {
      return config('spec.mounts', `a mount was refused by Docker: ${message}`);
    }
    if (/executable file not found|\/bin\/sh|no such file or directory/i.test(message)) {
      return config('spec.image', `image ${this.#image.original} cannot run berth's init (/bin/sh): ${message}`);
    }
    if (/Minimum memory limit|NanoCPUs|range of CPUs|cannot be larger/i.test(message)) {
      return config('spec.resources', `resources refused by Docker: ${message}`);
    }
    return undefined;
  }

  async teardown(_opts: { signal?: AbortSignal } = {}): Promise<void> {
    this.#closed = true;
    this.#teardown ??= (async () => {
      // Let an in-flight start finish (or fail) first, so its container is not left behind.
      if (this.#starting) await this.#starting.catch(() => undefined);
      this.#setPhase('stopping');
      await this.#removeContainer();
      this.#setPhase('stopped');
    })();
    try {
      await this.#teardown;
    } catch (error) {
      // The engine failed to remove it (a restart, a 500): let a later teardown() try again.
      this.#teardown = undefined;
      throw error;
    }
  }

  async #removeContainer(): Promise<void> {
    const container = this.#container ?? this.#docker.getContainer(this.id);
    try {
      await container.remove({ force: true, v: true });
    } catch (error) {
      const status = statusOf(error);
      // Already gone, or already being removed: that is what teardown wants.
      if (status === 404 || (status === 409 && /already in progress/i.test(dockerMessage(error)))) return;
      throw mapDaemonError(error, this.#ctx('teardown')) ?? error;
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.teardown();
  }

  // ----------------------------------------------------------------------------- state checks

  #tornDown(operation: Operation): ConfigError {
    return new ConfigError({
      ...this.#ctx(operation),
      message: `environment ${this.id} was torn down; ${operation} needs a new environment`,
    });
  }

  #usable(operation: Operation): Docker.Container {
    if (this.#closed) throw this.#tornDown(operation);
    if (this.#lostReason) throw this.#lost(operation, this.#lostReason);
    if (!this.#container || this.#phase !== 'running') {
      throw new ConfigError({ ...this.#ctx(operation), message: `environment ${this.id} is not running (phase ${this.#phase}): call start() first` });
    }
    return this.#container;
  }

  /** teardown() ran while an operation was in flight: the caller's own doing, so cancelled. */
  #interruptedByTeardown(operation: Operation, cause?: unknown): CancelledError {
    return new CancelledError({
      ...this.#ctx(operation),
      message: `environment ${this.id} was torn down while ${operation} was running`,
      cause,
    });
  }

  #lost(operation: Operation, reason: string, cause?: unknown): SandboxLostError | TaskFailure {
    // The sandbox ended because the task outlived timeouts.lifetimeMs: the task's doing, and a
    // retry would only run out of time again.
    if (this.#lifetimeExceeded) {
      return new TaskFailure({
        ...this.#ctx(operation),
        kind: 'LifetimeExceeded',
        message: `sandbox ${this.id} reached its lifetime of ${this.spec.timeouts.lifetimeMs} ms during ${operation}`,
        cause,
      });
    }
    return new SandboxLostError({
      ...this.#ctx(operation),
      message: `sandbox ${this.id} was lost during ${operation}: ${reason}`,
      lastState: reason,
      cause,
    });
  }

  /** berth's init exits 0 when the lifetime's sleep ends; anything earlier was something else. */
  #endedByLifetime(state: { Status: string; ExitCode: number; StartedAt: string; FinishedAt: string }): boolean {
    const lifetime = this.spec.timeouts.lifetimeMs;
    if (lifetime === undefined || state.Status !== 'exited' || state.ExitCode !== 0) return false;
    const ran = Date.parse(state.FinishedAt) - Date.parse(state.StartedAt);
    return Number.isFinite(ran) && ran >= lifetime - 1000;
  }

  #markLost(reason: string): void {
    // A sandbox removed by our own teardown is not lost: the caller asked for it.
    if (this.#lostReason || this.#closed) return;
    this.#lostReason = reason;
    this.#setPhase('lost', reason);
    this.events.emit('lost', reason);
  }

  /**
   * Ask the engine whether the sandbox is still alive; marks it lost if not. `settleMs` polls a
   * little: when a container is killed, its execs end ~30 ms before the engine's state says so.
   */
  async #checkAlive(operation: Operation, settleMs = 0, cause?: unknown): Promise<SandboxLostError | TaskFailure | undefined> {
    if (this.#lostReason) return this.#lost(operation, this.#lostReason, cause);
    const container = this.#container ?? this.#docker.getContainer(this.id);
    const deadline = Date.now() + settleMs;
    for (;;) {
      try {
        const info = await container.inspect();
        if (!info.State.Running || info.State.Paused || info.State.Restarting) {
          const reason = info.State.OOMKilled ? 'OOMKilled' : `${info.State.Status} (exit ${info.State.ExitCode})`;
          this.#lifetimeExceeded ||= this.#endedByLifetime(info.State);
          this.#markLost(reason);
          return this.#lost(operation, reason, cause);
        }
      } catch (error) {
        if (statusOf(error) === 404) {
          this.#markLost('removed');
          return this.#lost(operation, 'removed', cause ?? error);
        }
        throw mapDaemonError(error, this.#ctx(operation)) ?? error;
      }
      if (Date.now() >= deadline) return undefined;
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  async #mapError(error: unknown, operation: Operation): Promise<unknown> {
    const mapped = mapEnvironmentError(error, this.#ctx(operation));
    if (mapped && SandboxLostError.isInstance(mapped)) {
      // The engine says it is gone; its state says how (a lifetime that ran out is not a loss).
      const seen = await this.#checkAlive(operation, 0, error).catch(() => undefined);
      if (seen) return seen;
      this.#markLost(mapped.lastState ?? 'gone');
    }
    return mapped ?? error;
  }

  // ----------------------------------------------------------------------------- exec

  async exec(command: string | readonly string[], opts: ExecOptions = {}): Promise<ExecResult> {
    const container = this.#usable('exec');
    const argv = typeof command === 'string' ? ['/bin/sh', '-c', command] : command;
    if (argv.length === 0 || typeof argv[0] !== 'string' || argv[0].length === 0) {
      throw new ConfigError({ ...this.#ctx('exec'), path: 'command', message: 'exec needs a non-empty command: a shell string or an argv array' });
    }
    if (opts.timeoutMs !== undefined && !(opts.timeoutMs > 0)) {
      throw new ConfigError({ ...this.#ctx('exec'), path: 'opts.timeoutMs', message: `timeoutMs must be a positive number of milliseconds, got ${opts.timeoutMs}` });
    }
    for (const name of Object.keys(opts.env ?? {})) {
      if (!ENV_NAME.test(name)) {
        throw new ConfigError({ ...this.#ctx('exec'), path: `opts.env.${name}`, message: `invalid environment variable name "${name}": names are [A-Za-z_][A-Za-z0-9_]*` });
      }
    }
    throwIfAborted(opts.signal, this.#ctx('exec'));
    let outcome;
    try {
      outcome = await runExec(container, argv, opts, {});
    } catch (error) {
      if (this.#closed) throw this.#interruptedByTeardown('exec', error);
      throw await this.#mapError(error, 'exec');
    }
    if (this.#closed) throw this.#interruptedByTeardown('exec');
    if (outcome.suspicious || outcome.cancelled) {
      // Killed by a signal from outside (137/143) or cut off: give the engine a moment to agree.
      const code = outcome.result.exitCode;
      const lost = await this.#checkAlive('exec', code === 137 || code === 143 || code < 0 ? 1000 : 0);
      if (lost) throw lost;
    }
    if (outcome.cancelled) throw cancelledFrom(opts.signal!, this.#ctx('exec'));
    // Alive, yet the engine never said how the command ended: that is the engine's failure, not
    // an exit code for the task to be judged by. (A timeout is still the task's: it ran too long.)
    if (outcome.exitUnknown && !outcome.result.timedOut) {
      throw new BackendUnavailableError({ ...this.#ctx('exec'), message: `the Docker engine never reported how the command ended in ${this.id}` });
    }
    return outcome.result;
  }

  // ----------------------------------------------------------------------------- transfers

  async #transfer<T>(
    operation: 'upload' | 'download',
    paths: { localPath: string; remotePath: string },
    opts: TransferOptions,
    body: (container: Docker.Container) => Promise<T>,
  ): Promise<T> {
    throwIfAborted(opts.signal, this.#ctx(operation));
    const fail = (reason: ConstructorParameters<typeof TransferError>[0]['reason'], message: string, cause: unknown, category?: 'task_failure' | 'permanent_infra') =>
      new TransferError({ ...this.#ctx(operation), ...paths, reason, message, cause, ...(category ? { category } : {}) });
    const verb = operation === 'upload' ? `upload ${paths.localPath} -> ${paths.remotePath}` : `download ${paths.remotePath} -> ${paths.localPath}`;

    let container: Docker.Container;
    try {
      container = this.#usable(operation);
    } catch (error) {
      // Say what was being transferred, with the loss as the cause (never the other way round).
      if (SandboxLostError.isInstance(error) || TaskFailure.isInstance(error)) throw fail('sandbox_lost', `${verb} failed: the sandbox is gone`, error);
      throw error;
    }
    // A stopped container's filesystem still accepts archives: check liveness around the copy.
    const before = await this.#checkAlive(operation);
    if (before) throw fail('sandbox_lost', `${verb} failed: the sandbox is gone`, before);
    let result: T;
    try {
      result = await body(container);
    } catch (error) {
      if (opts.signal?.aborted) throw cancelledFrom(opts.signal, this.#ctx(operation));
      if (this.#closed) throw this.#interruptedByTeardown(operation, error);
      const lost = isContainerGone(error) ? await this.#checkAlive(operation) : await this.#checkAlive(operation).catch(() => undefined);
      if (lost) throw fail('sandbox_lost', `${verb} failed: the sandbox is gone`, lost);
      if (TransferError.isInstance(error)) throw error;
      // What the sandbox holds is the task's business: a link out of it is not misconfiguration.
      if (error instanceof UnsafeEntryError) throw fail('unsafe_entry', `${verb} refused: ${error.message}`, error, 'task_failure');
      if (error instanceof UnexpectedEntryError) throw fail('not_found', `${verb} failed: ${error.message}`, error, 'task_failure');
      const code = (error as NodeJS.ErrnoException).code;
      if (typeof code === 'string' && ['ENOENT', 'ENOTDIR', 'EACCES', 'EISDIR', 'ENOSPC', 'EROFS', 'EEXIST'].includes(code) && statusOf(error) === undefined) {
        throw fail('local_io', `${verb} failed on the local side: ${(error as Error).message}`, error);
      }
      const status = statusOf(error);
      if (status === 404) throw fail('not_found', `${verb} failed: ${paths.remotePath} does not exist in the sandbox`, error, 'task_failure');
      const daemon = mapDaemonError(error, this.#ctx(operation));
      if (daemon) throw fail('interrupted', `${verb} failed: ${daemon.message}`, daemon);
      throw fail('remote_io', `${verb} failed: ${dockerMessage(error)}`, error);
    }
    if (this.#closed) throw this.#interruptedByTeardown(operation);
    const after = await this.#checkAlive(operation);
    if (after) throw fail('sandbox_lost', `${verb} failed: the sandbox died during the transfer`, after);
    return result;
  }

  #checkRemote(path: string, operation: Operation): void {
    if (!path.startsWith('/')) {
      throw new ConfigError({ ...this.#ctx(operation), path: 'remotePath', message: `remote paths are absolute inside the sandbox; got "${path}"` });
    }
  }

  async #put(container: Docker.Container, packed: { stream: NodeJS.ReadableStream | unknown; done: Promise<TransferStats> }, signal?: AbortSignal): Promise<TransferStats> {
    packed.done.catch(() => undefined);
    const stream = packed.stream as NodeJS.ReadableStream & { destroy(e?: Error): void };
    const onAbort = () => stream.destroy(new Error('aborted'));
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      // Whichever fails first wins: a local read error or the engine refusing the archive.
      const [, stats] = await Promise.all([container.putArchive(stream, { path: '/' }), packed.done]);
      return stats;
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }

  async uploadFile(localPath: string, remotePath: string, opts: TransferOptions = {}): Promise<void> {
    this.#checkRemote(remotePath, 'upload');
    await this.#transfer('upload', { localPath, remotePath }, opts, (c) => this.#put(c, packFile(localPath, remotePath), opts.signal));
  }

  async uploadDir(localDir: string, remoteDir: string, opts: TransferOptions = {}): Promise<TransferStats> {
    this.#checkRemote(remoteDir, 'upload');
    return this.#transfer('upload', { localPath: localDir, remotePath: remoteDir }, opts, (c) =>
      this.#put(c, packDirectory(localDir, remoteDir), opts.signal),
    );
  }

  async #get(container: Docker.Container, remotePath: string, signal: AbortSignal | undefined): Promise<NodeJS.ReadableStream> {
    const stream = (await container.getArchive({ path: remotePath })) as NodeJS.ReadableStream & { destroy(e?: Error): void };
    if (signal) {
      const onAbort = () => stream.destroy(new Error('aborted'));
      signal.addEventListener('abort', onAbort, { once: true });
      // Long-lived signals see many downloads: do not keep each one's stream alive.
      stream.once('close', () => signal.removeEventListener('abort', onAbort));
      if (signal.aborted) onAbort();
    }
    return stream;
  }

  async downloadFile(remotePath: string, localPath: string, opts: TransferOptions = {}): Promise<void> {
    this.#checkRemote(remotePath, 'download');
    await this.#transfer('download', { localPath, remotePath }, opts, async (c) =>
      extractSingleFile(await this.#get(c, remotePath, opts.signal), localPath, remotePath),
    );
  }

  async downloadDir(remoteDir: string, localDir: string, opts: TransferOptions = {}): Promise<TransferStats> {
    this.#checkRemote(remoteDir, 'download');
    const normalised = remoteDir.length > 1 ? remoteDir.replace(/\/+$/, '') : remoteDir;
    return this.#transfer('download', { localPath: localDir, remotePath: remoteDir }, opts, async (c) =>
      extractDirectory(await this.#get(c, normalised, opts.signal), localDir),
    );
  }
}

