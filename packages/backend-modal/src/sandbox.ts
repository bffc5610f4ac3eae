import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { ConfigError, isBuiltImage, oneShots, type EnvironmentSpec, type ImageSource, type NetworkMode, type Operation } from '@berth/core';
import {
  DEFAULT_LIFETIME_MS,
  defaultLifetimeMs,
  keepAliveCommand,
  snapshotRef,
  startServices,
  throwIfAborted,
  type CreateContext,
  type ProcessRequest,
  type SandboxProcess,
  type SandboxStatus,
  type SandboxTransport,
  type SnapshotContext,
  type SnapshotImage,
} from '@berth/core/backend-kit';
import { whileThrottled } from './create-throttle.js';
import { BACKEND, IDENTITY } from './credentials.js';
import { ModalProcess } from './exec-process.js';
import { gpuConfig } from './gpu.js';
import type { BuildRecipe, ImagePlan } from './image.js';
import { mapModalError } from './modal-errors.js';
import { createdNetwork, switchedAccess } from './network-access.js';
import { DEFAULT_SNAPSHOT_LIFETIME_MS, type ModalBackendOptions } from './options.js';
import { endReason } from './sandbox-result.js';
import { startFailure } from './start-failure.js';
import type { ModalShared } from './shared.js';
import { sandboxApiFor } from './sandbox-api.js';
import { ModalServices, refuseUnrunnable } from './services.js';
import {
  GRPC_CODE,
  GrpcError,
  LONG_POLL_SECS,
  TASK_ID_POLL_MS,
  TaskRouter,
  sandboxApiVersion,
  type GenericResult,
  type RouterAccess,
  type SandboxDefinition,
} from './wire/index.js';

/**
 * Modal's longest sandbox timeout: 24 h ("a timeout of up to 24 hours", modal.com/docs/guide/sandbox).
 * Modal's own default, when none is sent, is 5 minutes: far too short for a task.
 */
const MODAL_MAX_LIFETIME_MS = 24 * 3600 * 1000;
const MODAL_LIFETIME_WHY = "Modal's longest sandbox timeout is 24 h, and a sandbox always has one (Modal's own default is 5 minutes)";

/** The timeout of a sandbox whose spec sets no lifetime: options.defaultLifetimeMs, checked (ConfigError naming it). */
export function modalDefaultLifetimeMs(options: ModalBackendOptions): number {
  return defaultLifetimeMs(options, {
    ...IDENTITY,
    maxMs: MODAL_MAX_LIFETIME_MS,
    offAllowed: false,
    why: MODAL_LIFETIME_WHY,
  }) as number;
}

/** Modal's bound on a command line; longer ones run through a script (see #argvScript). */
const ARGV_LIMIT = 48 * 1024;

function argvBytes(argv: readonly string[]): number {
  return argv.reduce((n, a) => n + Buffer.byteLength(a) + 1, 0);
}

/** The image a sandbox runs: pulled by reference, or built from a Dockerfile (`recipe`) on that base. */
export interface SandboxImage {
  image: ImagePlan;
  recipe?: BuildRecipe;
  /** A snapshot of this backend (env.snapshot()): Modal's image id, started from as it is. */
  snapshotImageId?: string;
}

/** One Modal sandbox, as the kit's transport. */
export class ModalSandbox implements SandboxTransport {
  readonly #shared: ModalShared;
  readonly #id: string;
  readonly #spec: EnvironmentSpec;
  readonly #plan: Promise<SandboxImage>;
  /** The timeout when the spec sets no lifetime (options.defaultLifetimeMs, checked by the factory). */
  readonly #defaultLifetimeMs: number;
  #sandboxId: string | undefined;
  #taskId: string | undefined;
  #router: TaskRouter | undefined;
  #access: Promise<RouterAccess> | undefined;
  readonly #role: { entrypoint?: string[]; i6pn?: boolean; planOf?: (image: ImageSource) => Promise<SandboxImage> };
  /** spec.services: a sandbox each (services.ts). */
  readonly #services: ModalServices;

  constructor(
    shared: ModalShared,
    id: string,
    spec: EnvironmentSpec,
    plan: Promise<SandboxImage>,
    defaultLifetime = DEFAULT_LIFETIME_MS,
    /** A service's own sandbox (services.ts): its command instead of the keep-alive, on i6pn. Else: the services to start beside it. */
    role: { entrypoint?: string[]; i6pn?: boolean; planOf?: (image: ImageSource) => Promise<SandboxImage> } = {},
  ) {
    this.#shared = shared;
    this.#id = id;
    this.#spec = spec;
    this.#plan = plan;
    this.#defaultLifetimeMs = defaultLifetime;
    this.#role = role;
    refuseUnrunnable(spec, id);
    const planOf = role.planOf;
    this.#services = new ModalServices(id, spec, (name, sub, image, entrypoint) => {
      if (!planOf) throw new Error('unreachable: a sandbox with services has a planOf');
      return new ModalSandbox(shared, `${id}-${name}`, sub, planOf(image), defaultLifetime, { entrypoint, i6pn: true });
    });
    plan.catch(() => undefined); // surfaced by create()
  }

  #ctx(operation: Operation) {
    return { operation, backend: BACKEND, environmentId: this.#id };
  }

  #map(error: unknown, operation: Operation, sandboxCall = true): unknown {
    return mapModalError(error, this.#ctx(operation), { sandboxCall }) ?? error;
  }

  async create(ctx: CreateContext): Promise<void> {
    const { sandboxes, options } = this.#shared;
    let appId: string;
    let imageId: string;
    const { image: plan, recipe, snapshotImageId } = await this.#plan;
    try {
      appId = await this.#shared.app(ctx.signal);
      // A snapshot of this backend is an image Modal has already: nothing to pull or build.
      imageId = snapshotImageId ?? (await this.#ensureImage(ctx, appId, plan, recipe));
    } catch (error) {
      throwIfAborted(ctx.signal, this.#ctx('start'));
      throw mapModalError(error, this.#ctx('pull'), { path: 'spec.image.auth.secretName' }) ?? error;
    }
    // The image is on Modal (pulled FROM the reference, built, or a snapshot it already had).
    ctx.progress({ reached: 'pulled' });
    const spec = this.#spec;
    ctx.progress({ phase: 'starting', status: 'creating the sandbox' });
    try {
      const lifetime = spec.timeouts.lifetimeMs;
      // The sandbox and its services reach each other over i6pn, which a blocked network turns off.
      const i6pn = this.#role.i6pn === true || this.#services.any;
      const definition: SandboxDefinition = {
        entrypoint_args: this.#role.entrypoint ?? keepAliveCommand(lifetime),
        ...(i6pn ? { i6pn_enabled: true } : {}),
        image_id: imageId,
        resources: {
          ...(spec.resources.cpus !== undefined ? { milli_cpu: Math.round(spec.resources.cpus * 1000) } : {}),
          ...(spec.resources.memoryMb !== undefined ? { memory_mb: spec.resources.memoryMb } : {}),
          ...(spec.resources.storageMb !== undefined ? { ephemeral_disk_mb: spec.resources.storageMb } : {}),
          ...gpuConfig(spec.resources),
        },
        // Modal ends the sandbox at this timeout by itself: the backstop when nothing of berth is left.
        timeout_secs: Math.max(1, Math.ceil((lifetime ?? this.#defaultLifetimeMs) / 1000)),
        ...(spec.timeouts.idleMs ? { idle_timeout_secs: Math.max(1, Math.ceil(spec.timeouts.idleMs / 1000)) } : {}),
        ...(spec.workdir ? { workdir: spec.workdir } : {}),
        ...createdNetwork(spec, i6pn),
      };
      const created = await sandboxes.create(
        sandboxApiFor(this.#shared.sandboxApi, spec),
        { appId, definition, tags: ctx.labels, env: spec.env, ...(options.environmentName ? { environmentName: options.environmentName } : {}) },
        ctx.signal,
        // A rate limit is told to the creation limiter and waited out within the start's deadline.
        whileThrottled(ctx),
      );
      this.#sandboxId = created.sandboxId;
      ctx.progress({ reached: 'accepted' });
      // V2 may place the sandbox at once and say so; its router access then serves the first exec.
      if (created.routerAccess) this.#access = Promise.resolve(created.routerAccess);
      if (created.taskId) this.#taskId = created.taskId;
      else await this.#waitTask(ctx, plan);
      // A task: Modal placed the sandbox and runs its main process.
      ctx.progress({ reached: 'running' });
    } catch (error) {
      throwIfAborted(ctx.signal, this.#ctx('start'));
      throw this.#map(error, 'start', false);
    }
    if (this.#services.any) await this.#startServices(ctx);
  }

  /** The services, in the kit's order; then every member of the group knows every name (i6pn addresses in /etc/hosts). */
  async #startServices(ctx: CreateContext): Promise<void> {
    await this.#services.bind(ctx, this);
    await startServices(
      this.#spec.services,
      this.#services,
      { backend: BACKEND, environmentId: this.#id, signal: ctx.signal, status: (status) => ctx.progress({ status }) },
      this.#spec.dependsOn,
    );
    await this.#services.writeAllHosts(this, oneShots(this.#spec.services, this.#spec.dependsOn));
  }

  /** How the sandbox ended (its exit code and berth's words for its end), or undefined while it runs. */
  async ended(): Promise<{ exitCode: number | null; reason: string } | undefined> {
    if (!this.#sandboxId) return { exitCode: null, reason: 'never started' };
    const result = await this.#shared.sandboxes.wait(this.#sandboxId, 0).catch((error: unknown) => {
      if (GrpcError.isInstance(error) && error.code === GRPC_CODE.NOT_FOUND)
        return { status: 'GENERIC_STATUS_TERMINATED', exception: 'removed' } as GenericResult;
      throw error;
    });
    if (!result) return undefined;
    // proto3: an exit code of 0 is not on the wire.
    const exitCode = typeof result.exitcode === 'number' ? result.exitcode : result.status === 'GENERIC_STATUS_SUCCESS' ? 0 : null;
    return { exitCode, reason: endReason(result) };
  }

  /** What its main process printed (a service's, for the error that names it), as far as the router has it; '' where it cannot be read. */
  async output(): Promise<string> {
    if (!this.#taskId) return '';
    return this.#routerFor()
      .entrypointOutput(500, AbortSignal.timeout(10_000))
      .catch(() => '');
  }

  /** The image pulled (FROM the reference) or built on Modal, its log lines reported as progress. */
  #ensureImage(ctx: CreateContext, appId: string, plan: ImagePlan, recipe: BuildRecipe | undefined): Promise<string> {
    ctx.progress(
      recipe
        ? { phase: 'building', status: 'building the Dockerfile on Modal' }
        : { phase: 'pulling', status: `building the image FROM ${plan.ref.canonical} on Modal` },
    );
    const context = isBuiltImage(this.#spec.image) ? this.#spec.image.build.context : undefined;
    const onLog = (line: string) => ctx.progress(context !== undefined ? { build: { context, line } } : { status: line });
    return this.#shared.images.ensure(plan, appId, this.#shared.options.environmentName, onLog, ctx.signal, recipe);
  }

  /**
   * Until the sandbox has a task (it runs), or its result says why it never will. V1 long-polls
   * (the server holds each call up to LONG_POLL_SECS). V2 polls every TASK_ID_POLL_MS, as Modal's
   * SDK does: it sends SandboxGetTaskIdV2 without timeout or wait_until_ready, so a held V2 call is
   * not something Modal is known to serve, and the poll is cheap next to a sandbox's scheduling.
   */
  async #waitTask(ctx: CreateContext, plan: ImagePlan): Promise<void> {
    const sandboxId = this.#sandboxId!;
    const polled = sandboxApiVersion(sandboxId) === 2;
    let said = 0;
    for (;;) {
      throwIfAborted(ctx.signal, this.#ctx('start'));
      const { taskId, result } = await this.#shared.sandboxes.taskId(sandboxId, LONG_POLL_SECS, ctx.signal);
      if (taskId) {
        this.#taskId = taskId;
        return;
      }
      if (result) throw await startFailure(result, plan, { base: this.#ctx('start'), mayProbe: (ref) => this.#shared.mayProbe(ref) });
      // Said once per long-poll, or about every LONG_POLL_SECS of 0.5 s polls.
      if (!polled || Date.now() - said >= LONG_POLL_SECS * 1000) {
        said = Date.now();
        ctx.progress({ status: 'waiting for the sandbox to be scheduled' });
      }
      if (polled) await delay(TASK_ID_POLL_MS, ctx.signal);
    }
  }

  async inspect(): Promise<SandboxStatus> {
    if (!this.#sandboxId) return { running: false, reason: 'never started' };
    let result: GenericResult | undefined;
    try {
      result = await this.#shared.sandboxes.wait(this.#sandboxId, 0);
    } catch (error) {
      if (GrpcError.isInstance(error) && error.code === GRPC_CODE.NOT_FOUND) return { running: false, reason: 'removed' };
      throw this.#map(error, 'exec');
    }
    if (!result) {
      // A service that ended is the sandbox's loss too: its commands' world is not whole.
      const service = this.#services.any ? await this.#services.lost(oneShots(this.#spec.services, this.#spec.dependsOn)) : undefined;
      return service ? { running: false, reason: service } : { running: true };
    }
    // The keep-alive exits 0 when timeouts.lifetimeMs runs out; Modal's own timeout says TIMEOUT.
    // Without a lifetime in the spec, that timeout was the backend's defaultLifetimeMs: say so.
    const own = this.#spec.timeouts.lifetimeMs;
    const timedOut = result.status === 'GENERIC_STATUS_TIMEOUT';
    const lifetimeExpired = timedOut || (result.status === 'GENERIC_STATUS_SUCCESS' && own !== undefined);
    // Every other end is the sandbox lost (the kit's rule), its reason in the error's message.
    return {
      running: false,
      reason: endReason(result),
      lifetimeExpired,
      ...(timedOut && own === undefined ? { defaultLifetimeMs: this.#defaultLifetimeMs } : {}),
    };
  }

  async remove(): Promise<void> {
    await this.#services.remove();
    if (!this.#sandboxId) return;
    try {
      await this.#shared.sandboxes.terminate(this.#sandboxId);
    } catch (error) {
      if (GrpcError.isInstance(error) && error.code === GRPC_CODE.NOT_FOUND) return;
      throw this.#map(error, 'teardown', false);
    }
  }

  /** The router for this sandbox's task, its access asked once and again when it expires. */
  #routerFor(): TaskRouter {
    const taskId = this.#taskId;
    const sandboxId = this.#sandboxId;
    if (!taskId || !sandboxId) throw new ConfigError({ ...this.#ctx('exec'), path: 'environment', message: 'the sandbox has no task yet' });
    this.#router ??= new TaskRouter(
      this.#shared.transport,
      taskId,
      (fresh) => {
        if (fresh || !this.#access) {
          this.#access = this.#shared.sandboxes.routerAccess(sandboxId, taskId);
          this.#access.catch(() => (this.#access = undefined));
        }
        return this.#access;
      },
      this.#shared.options.ca,
    );
    return this.#router;
  }

  async spawn(request: ProcessRequest): Promise<SandboxProcess> {
    // Modal's exec has no user: the kit's launcher switches users inside the sandbox.
    const router = this.#routerFor();
    const execId = randomUUID();
    const argv = argvBytes(request.argv) > ARGV_LIMIT ? await this.#argvScript(router, request.argv) : request.argv;
    const tty = request.tty;
    // The terminal type the caller gave the command, else the one Modal's SDKs send.
    const pty = tty ? { ...tty, term: request.env.TERM ?? 'xterm-256color' } : undefined;
    await router.start({ execId, argv, env: { ...request.env }, ...(pty ? { pty } : {}) });
    const process = new ModalProcess(router, execId, request.stdin, tty !== undefined);
    // Without stdin it is closed at once; a terminal's never is (it has no end of input).
    if (!request.stdin && !tty) await process.closeStdin().catch(() => undefined);
    return process;
  }

  /**
   * A command line longer than Modal takes goes into a script in the sandbox first (through the
   * stdin of a small exec), and the script runs it: the same argv, whatever its length.
   */
  async #argvScript(router: TaskRouter, argv: readonly string[]): Promise<string[]> {
    const path = `/tmp/.berth-cmd-${randomUUID()}`;
    const script = `rm -f "$0"; exec ${argv.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ')}\n`;
    const writer = randomUUID();
    await router.start({ execId: writer, argv: ['/bin/sh', '-c', 'cat > "$1"', 'berth', path], env: {} });
    const process = new ModalProcess(router, writer, true);
    await new Promise<void>((resolve, reject) => process.stdin!.end(Buffer.from(script), (error?: Error | null) => (error ? reject(error) : resolve())));
    const exit = await process.exit;
    if (exit.code !== 0)
      throw new ConfigError({
        ...this.#ctx('exec'),
        path: 'command',
        message: `the command line is too long for Modal (${argvBytes(argv)} bytes) and could not be written to ${path} in the sandbox`,
      });
    return ['/bin/sh', path];
  }

  /** Modal's filesystem snapshot through the task's router, kept for options.snapshotLifetimeMs (its images carry no labels). */
  async snapshot(ctx: SnapshotContext): Promise<SnapshotImage> {
    const { control, options } = this.#shared;
    const ttlSeconds = Math.max(1, Math.ceil((options.snapshotLifetimeMs ?? DEFAULT_SNAPSHOT_LIFETIME_MS) / 1000));
    const imageId = await this.#routerFor().snapshotFilesystem(randomUUID(), ttlSeconds, ctx.signal);
    return { ref: snapshotRef(BACKEND, imageId), remove: () => control.imageDelete(imageId) };
  }

  /**
   * Replaces the task's outbound policy. The router's answer is taken as the policy applied: the
   * router runs on the task's worker, Modal's SDKs say "established connections that the new policy
   * no longer permits are terminated", and Modal's own example runs the next command straight after
   * (not verified against the real service; see the README).
   */
  async setNetwork(mode: NetworkMode): Promise<void> {
    await this.#routerFor().setNetworkAccess(switchedAccess(mode));
  }

  mapError(error: unknown, operation: Operation) {
    return mapModalError(error, this.#ctx(operation), { sandboxCall: true });
  }
}
