import type { Readable } from 'node:stream';
import type Docker from 'dockerode';
import {
  ConfigError,
  ImageBuildError,
  ImagePullError,
  ServiceStartError,
  isAllowlist,
  parseImageRef,
  type EnvironmentSpec,
  type ImageRef,
  type ImageSource,
  type NetworkMode,
  type Operation,
} from '@berth/core';
import {
  BUILD_REPOSITORY,
  keepAliveCommand,
  refusedBeforeSending,
  startServices,
  throwIfAborted,
  type ArchiveTransport,
  type CreateContext,
  type CreateOutcome,
  type CreationLimiter,
  type ProcessRequest,
  type ResolvedAllowlist,
  type SandboxProcess,
  type SandboxStatus,
  type SandboxTransport,
  type SnapshotContext,
  type SnapshotImage,
} from '@berth/core/backend-kit';
import { mapDaemonError, mapEnvironmentError, startRefusal, statusOf, dockerMessage } from './docker-errors.js';
import { spawnDockerProcess } from './exec-process.js';
import { archivePath, getArchive, plainAddress } from './archive-get.js';
import type { DockerBackendOptions } from './options.js';
import { gpuDeviceRequests, type GpuSupport } from './gpu.js';
import { ImageMountVolumes, type DockerImageMount } from './image-mounts.js';
import { commitSnapshot } from './snapshot.js';
import { bridgeRefusal, publicNetworkName } from './bridge-limits.js';
import type { BridgeProxy } from './bridge-proxy.js';
import type { EgressImage } from './egress-image.js';
import { SandboxEgress } from './sandbox-egress.js';
import { DockerServices, volumeMounts } from './services.js';
import { ensurePulled, supplyImage } from './image-supply.js';
import { BACKEND } from './identity.js';

/** Where a sandbox's image comes from: a pull (resolvePull's) or a build. */
export type { DockerImageSource } from './image-supply.js';
import type { DockerImageSource } from './image-supply.js';

/** One container, as the kit's transport: named after the environment id, so it can be found before create returns. */
export class DockerSandbox implements SandboxTransport {
  readonly archive: ArchiveTransport;
  /** The engine's exec takes a User (resolved by the runtime): no launcher needed. */
  readonly nativeUser = true;
  readonly #docker: Docker;
  readonly #options: DockerBackendOptions;
  readonly #id: string;
  readonly #spec: EnvironmentSpec;
  readonly #source: DockerImageSource;
  readonly #gpus: GpuSupport;
  readonly #imageMounts: ImageMountVolumes;
  /** The packet filter of an allowlist (egress-rules.ts). */
  readonly #egress: SandboxEgress;
  /** spec.services: their containers and the network the sandbox shares with them (services.ts). */
  readonly #services: DockerServices;
  /** The backend instance's queue for container removals (engine-limits.ts says why). */
  readonly #removals: CreationLimiter;
  /** What the container runs: the pulled reference, or the build's tag once built. */
  #image: ImageRef;
  /** Whether a container may exist: only the create call makes one (pulls and builds make images). */
  #outcome: CreateOutcome = 'not-attempted';

  constructor(
    docker: Docker,
    options: DockerBackendOptions,
    id: string,
    spec: EnvironmentSpec,
    source: DockerImageSource,
    gpus: GpuSupport,
    removals: CreationLimiter,
    egress: { image: EgressImage; proxy: BridgeProxy },
    /** Where a service's image comes from (the same rules as the sandbox's own). */
    sourceOf: (image: ImageSource) => DockerImageSource,
    imageMounts: readonly DockerImageMount[] = [],
  ) {
    this.#docker = docker;
    this.#options = options;
    this.#id = id;
    this.#spec = spec;
    this.#source = source;
    this.#gpus = gpus;
    this.#removals = removals;
    this.#imageMounts = new ImageMountVolumes(docker, id, imageMounts);
    this.#egress = new SandboxEgress(docker, id, options, egress.image, egress.proxy);
    this.#services = new DockerServices(docker, options, id, spec, sourceOf);
    this.#image = source.kind === 'pull' ? source.image : parseImageRef(BUILD_REPOSITORY);
    const container = () => this.#container;
    this.archive = {
      put: async (tar, signal) => {
        await container().putArchive(tar, { path: '/', ...(signal ? { abortSignal: signal } : {}) });
      },
      get: async (remotePath, signal) => {
        try {
          // Big files at engine speed: a plain socket where one reaches the engine (archive-get.ts).
          const modem = docker.modem as Parameters<typeof plainAddress>[0];
          const plain = await plainAddress(modem);
          if (plain) return await getArchive(plain, archivePath(modem, id, remotePath), signal);
          return (await container().getArchive({ path: remotePath, ...(signal ? { abortSignal: signal } : {}) })) as Readable;
        } catch (error) {
          // The engine says 404 for a missing path and a missing container alike; the kit's
          // liveness check tells them apart.
          if (statusOf(error) === 404) return undefined;
          throw error;
        }
      },
    };
  }

  get #container(): Docker.Container {
    return this.#docker.getContainer(this.#id);
  }

  #ctx(operation: Operation) {
    return { operation, backend: BACKEND, environmentId: this.#id };
  }

  async create(ctx: CreateContext): Promise<void> {
    // Before any pull: an engine without the NVIDIA runtime would run the task without its GPUs.
    await this.#gpus.require(this.#spec.resources.gpus ?? 0, this.#ctx('start'));
    await this.#ensureImage(ctx);
    // The image is there (pulled, found present, or built): the engine's pull is over.
    ctx.progress({ reached: 'pulled' });
    await this.#fillImageMounts(ctx);
    ctx.progress({ phase: 'starting', status: 'creating container' });
    await this.#createAndRun(ctx);
  }

  async #ensureImage(ctx: CreateContext): Promise<void> {
    this.#image = await supplyImage(this.#docker, this.#options, this.#source, this.#id, ctx);
  }

  /** Image mounts: their images pulled, each copied into its volume before the sandbox is made. */
  async #fillImageMounts(ctx: CreateContext): Promise<void> {
    const mounts = this.#imageMounts.mounts;
    if (mounts.length === 0) return;
    for (const mount of mounts) await ensurePulled(this.#docker, this.#options, mount, this.#id, ctx);
    ctx.progress({ phase: 'starting', status: `copying ${mounts.length} image mount(s)` });
    try {
      await this.#imageMounts.fill(ctx.labels, ctx.signal, this.#ctx('start'));
    } catch (error) {
      throwIfAborted(ctx.signal, this.#ctx('start'));
      throw mapDaemonError(error, this.#ctx('start')) ?? error;
    }
  }

  async #createAndRun(ctx: CreateContext): Promise<void> {
    this.#egress.bind(ctx.labels, ctx.notify);
    const { resources, env, workdir, mounts, timeouts, networkSwitch } = this.#spec;
    // A sandbox that may switch networks, or has an allowlist, is made on the bridge and, to start
    // offline, taken off it before it starts: NetworkMode 'none' could never be connected later.
    // An allowlist's sandbox joins the bridge only once its packet filter is written.
    const allowlist = isAllowlist(this.#spec.network) ? this.#spec.network : undefined;
    const resolved = allowlist ? await this.#egress.resolve(allowlist) : undefined;
    const offline = this.#spec.network === 'none' || allowlist !== undefined;
    const network = networkSwitch || allowlist ? 'public' : this.#spec.network;
    // With services the sandbox is made on their network (as 'main') and joins the bridge besides.
    const group = this.#services.any ? this.#services.network : undefined;
    await this.#services.createVolumes(ctx.labels);
    if (group) await this.#services.createNetwork(ctx.labels, ctx);
    // Mounts, not Binds: Binds silently creates a missing host path as an empty directory.
    const binds: Docker.MountSettings[] = mounts
      .filter((m) => m.type === 'bind')
      .map((m) => ({ Type: 'bind', Source: m.source, Target: m.target, ReadOnly: m.readOnly }));
    const imageMounts = [...this.#imageMounts.settings(), ...volumeMounts(this.#id, mounts)];
    try {
      await this.#createContainer({
        name: this.#id,
        Image: this.#image.canonical,
        Entrypoint: [],
        Cmd: keepAliveCommand(timeouts.lifetimeMs),
        Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
        ...(workdir ? { WorkingDir: workdir } : {}),
        Labels: { ...ctx.labels },
        HostConfig: {
          Init: this.#options.init ?? false,
          ...(group
            ? { NetworkMode: group }
            : network === 'none'
              ? { NetworkMode: 'none' }
              : this.#options.publicNetwork
                ? { NetworkMode: this.#options.publicNetwork }
                : {}),
          ...(resources.cpus ? { NanoCpus: Math.round(resources.cpus * 1e9) } : {}),
          ...(resources.memoryMb ? { Memory: resources.memoryMb * 1024 * 1024 } : {}),
          ...(resources.gpus ? { DeviceRequests: gpuDeviceRequests(resources.gpus) } : {}),
          ...(binds.length || imageMounts.length ? { Mounts: [...binds, ...imageMounts] } : {}),
          // The allowlist's filter is IPv4's: a sandbox that may get one has no IPv6 to slip out by.
          ...(allowlist || networkSwitch ? { Sysctls: { 'net.ipv6.conf.all.disable_ipv6': '1' } } : {}),
        },
        ...(network === 'none' && !group ? { NetworkDisabled: true } : {}),
        ...(group ? { NetworkingConfig: { EndpointsConfig: { [group]: { Aliases: ['main'] } } } } : {}),
      });
      ctx.progress({ reached: 'accepted' });
      if (group && network === 'public' && !offline) await this.#bridge('public');
      if (!group && (networkSwitch || allowlist) && offline) await this.#bridge('none');
      throwIfAborted(ctx.signal, this.#ctx('start'));
      await this.#container.start();
      throwIfAborted(ctx.signal, this.#ctx('start'));
      const info = await this.#container.inspect();
      if (!info.State.Running) {
        const logs = await this.#container.logs({ stdout: true, stderr: true, tail: 20 }).catch(() => Buffer.alloc(0));
        throw new ConfigError({
          ...this.#ctx('start'),
          path: 'spec.image',
          message: `sandbox exited right after starting (${info.State.Status}, exit ${info.State.ExitCode}): berth needs /bin/sh in the image. Output: ${logs
            .toString('utf8')
            .replace(/[\x00-\x08]/g, '')
            .slice(-500)}`,
        });
      }
      ctx.progress({ reached: 'running' });
      if (group) {
        await startServices(
          this.#spec.services,
          this.#services,
          {
            backend: BACKEND,
            environmentId: this.#id,
            signal: ctx.signal,
            status: (status) => ctx.progress({ status }),
          },
          this.#spec.dependsOn,
        );
        await this.#writeServiceHosts();
      }
      if (allowlist) {
        ctx.progress({ status: `writing the allowlist's packet filter (${allowlist.allow.length} entries) into the sandbox` });
        if (!resolved) throw new Error('unreachable: an allowlist is resolved before its container is made');
        await this.#egress.allow(allowlist, await this.#withServices(resolved), () => this.#join());
        ctx.progress({ reached: 'network' });
      }
    } catch (error) {
      if (ServiceStartError.isInstance(error) || ImagePullError.isInstance(error) || ImageBuildError.isInstance(error)) throw error;
      // Deterministic refusals first: the engine reports some of them as 500s.
      throw (
        startRefusal(error, this.#ctx('start'), this.#image.original) ??
        bridgeRefusal(error, this.#ctx('start'), publicNetworkName(this.#options.publicNetwork)) ??
        mapDaemonError(error, this.#ctx('start')) ??
        error
      );
    }
  }

  async #createContainer(options: Docker.ContainerCreateOptions): Promise<void> {
    try {
      await this.#docker.createContainer(options);
    } catch (error) {
      // Once sent, a container may exist (an answer lost to a cut connection): teardown removes
      // it. Only a connection that was never made proves there is none.
      // Image mounts' volumes made before it are the sandbox's too: then there is something to remove.
      this.#outcome = refusedBeforeSending(error) && !this.#imageMounts.made ? 'refused' : 'unknown';
      throw error;
    }
    this.#outcome = 'created';
  }

  createOutcome(): CreateOutcome {
    // Image mounts' volumes and the services' network made before the container are the sandbox's too.
    return this.#outcome === 'not-attempted' && (this.#imageMounts.made || this.#services.any || this.#services.volumesMade) ? 'unknown' : this.#outcome;
  }

  /** An allowlist's blocks, with the services' network let out too (the sandbox reaches its services under any network). */
  async #withServices(resolved: ResolvedAllowlist): Promise<ResolvedAllowlist> {
    if (!this.#services.any) return resolved;
    return { ...resolved, blocks: [...resolved.blocks, await this.#services.subnet()] };
  }

  /** The sandbox's /etc/hosts names its services' addresses (the engine rewrites the file at every join). */
  async #writeServiceHosts(): Promise<void> {
    const argv = await this.#services.hostsCommand();
    const exec = await this.#container.exec({ Cmd: argv, User: '0', AttachStdout: true, AttachStderr: true });
    const stream = await exec.start({});
    for await (const _ of stream);
    const { ExitCode } = await exec.inspect();
    if (ExitCode !== 0)
      throw new ConfigError({
        ...this.#ctx('start'),
        path: 'spec.image',
        message: `the services' addresses could not be written into the sandbox's /etc/hosts (exit ${ExitCode}): berth needs /bin/sh in the image`,
      });
  }

  /** Joins the public bridge; with services, their hosts lines written again after the engine's rewrite. */
  async #join(): Promise<void> {
    await this.#bridge('public');
    if (this.#services.any) await this.#writeServiceHosts();
  }

  async inspect(): Promise<SandboxStatus> {
    let state;
    try {
      state = (await this.#container.inspect()).State;
    } catch (error) {
      if (statusOf(error) === 404) return { running: false, reason: 'removed' };
      throw error;
    }
    if (state.Running && !state.Paused && !state.Restarting) {
      // A service that ended is the sandbox's loss too: its commands' world is not whole.
      const service = await this.#services.lost();
      return service ? { running: false, reason: service } : { running: true };
    }
    const reason = state.OOMKilled ? 'OOMKilled' : `${state.Status} (exit ${state.ExitCode})`;
    return { running: false, reason, lifetimeExpired: this.#endedByLifetime(state) };
  }

  /** The keep-alive exits 0 when the lifetime's sleep ends; anything earlier was something else. */
  #endedByLifetime(state: { Status: string; ExitCode: number; StartedAt: string; FinishedAt: string }): boolean {
    const lifetime = this.#spec.timeouts.lifetimeMs;
    if (lifetime === undefined || state.Status !== 'exited' || state.ExitCode !== 0) return false;
    const ran = Date.parse(state.FinishedAt) - Date.parse(state.StartedAt);
    return Number.isFinite(ran) && ran >= lifetime - 1000;
  }

  async remove(): Promise<void> {
    await this.#egress.stop();
    try {
      await this.#removals.run(() => this.#container.remove({ force: true, v: true }));
    } catch (error) {
      const status = statusOf(error);
      // Already gone, or already being removed: that is what teardown wants.
      if (!(status === 404 || (status === 409 && /already in progress/i.test(dockerMessage(error)))))
        throw mapDaemonError(error, this.#ctx('teardown')) ?? error;
    }
    try {
      await this.#services.remove();
      await this.#imageMounts.remove();
    } catch (error) {
      throw mapDaemonError(error, this.#ctx('teardown')) ?? error;
    }
  }

  /**
   * 'public' and 'none' join or leave the public bridge (options.publicNetwork, else the default
   * one; off it, the sandbox has loopback only); an allowlist writes the sandbox's packet filter,
   * then joins it. 'public' after an allowlist empties the filter first.
   */
  async setNetwork(mode: NetworkMode): Promise<void> {
    if (isAllowlist(mode)) return this.#egress.allow(mode, await this.#withServices(await this.#egress.resolve(mode)), () => this.#join());
    if (mode === 'public') await this.#egress.open();
    else await this.#egress.stop();
    return mode === 'public' ? this.#join() : this.#bridge(mode);
  }

  async #bridge(mode: 'public' | 'none'): Promise<void> {
    const name = publicNetworkName(this.#options.publicNetwork);
    const bridge = this.#docker.getNetwork(name);
    try {
      if (mode === 'none') await bridge.disconnect({ Container: this.#id, Force: true });
      else await bridge.connect({ Container: this.#id });
    } catch (error) {
      // Already where it was asked to be: nothing to do.
      if (statusOf(error) === 403 && /already exists|is not connected/i.test(dockerMessage(error))) return;
      throw bridgeRefusal(error, this.#ctx('network'), name) ?? mapDaemonError(error, this.#ctx('network')) ?? error;
    }
  }

  snapshot(ctx: SnapshotContext): Promise<SnapshotImage> {
    return commitSnapshot(this.#docker, this.#id, this.#id, ctx);
  }

  spawn(request: ProcessRequest): Promise<SandboxProcess> {
    return spawnDockerProcess(this.#container, request);
  }

  mapError(error: unknown, operation: Operation) {
    return mapEnvironmentError(error, this.#ctx(operation));
  }
}
