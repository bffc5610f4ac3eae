import Docker from 'dockerode';
import {
  BerthError,
  ConfigError,
  SPECIFICATION_VERSION,
  isBuiltImage,
  mirrorImage,
  type Backend,
  type Capabilities,
  type Environment,
  type EnvironmentSpec,
  type EnvironmentSpecInput,
  type PreflightCheck,
  type PreflightReport,
  type SweepOptions,
  type SweepReport,
} from '@berth/core';
import {
  CreationLimiter,
  LABEL_MANAGED,
  LABEL_SESSION,
  SandboxEnvironment,
  Sweep,
  assertSupported,
  checkPullAuth,
  newEnvironmentId,
  parseEnvironmentSpec,
  preflightFailure,
  preflightSpec,
  startAndCleanUp,
} from '@berth/core/backend-kit';
import { dockerMessage, mapDaemonError, statusOf } from './docker-errors.js';
import type { DockerBackendOptions } from './options.js';
import { DockerImageBuilder } from './build.js';
import { checkBuild, checkImage } from './preflight.js';
import { BACKEND, DockerSandbox, type DockerImageSource } from './sandbox.js';

const CAPABILITIES: Capabilities = {
  gpus: false,
  networkModes: ['public', 'none'],
  imageAuth: ['basic', 'identityToken', 'secretName', 'dockerConfig', 'aws'],
  mounts: ['bind'],
  imageBuild: true,
  execUser: true,
  // Exec's Tty, sized by a resize right after the start (API 1.41 has no ConsoleSize on create).
  tty: true,
  networkSwitch: true,
  resourceLimits: { cpus: true, memory: true, storage: false },
};

const HINTS = {
  'resources.storage': 'leave it unset for Docker (limits need xfs quotas)',
  'mounts.image': 'use a bind mount of an extracted copy',
};

export class DockerBackend implements Backend {
  readonly specificationVersion = SPECIFICATION_VERSION;
  readonly name = BACKEND;
  readonly capabilities: Capabilities;
  readonly #options: DockerBackendOptions;
  readonly #limiter: CreationLimiter;
  #docker: Docker | undefined;
  /** Shared by every environment of this backend, so concurrent starts of one context share a build. */
  #builder: DockerImageBuilder | undefined;

  constructor(options: DockerBackendOptions) {
    if (options && 'env' in options) {
      throw new ConfigError({
        operation: 'config',
        backend: BACKEND,
        path: 'options.env',
        message: "createDockerBackend's env option is now dockerConfigEnv: it is where Docker config credentials are looked up, not the sandboxes' environment (that is spec.env)",
      });
    }
    this.#options = options;
    this.#limiter = new CreationLimiter(options.creation);
    this.capabilities = {
      ...CAPABILITIES,
      imageAuth: CAPABILITIES.imageAuth.filter((k) => k !== 'aws' || options.ecrLogin !== undefined),
    };
  }

  /** The engine's address, as dockerode resolves it (options, else DOCKER_HOST, else the default socket). */
  get target(): string {
    const { socketPath, host, port, protocol } = this.#options;
    if (socketPath) return `unix://${socketPath}`;
    if (host) return `${protocol ?? 'http'}://${host}${port ? `:${port}` : ''}`;
    return process.env.DOCKER_HOST || 'unix:///var/run/docker.sock';
  }

  /** The dockerode client, made on first use: the factory does no I/O. */
  get docker(): Docker {
    if (!this.#docker) {
      const { socketPath, host, port, protocol } = this.#options;
      this.#docker = socketPath || host ? new Docker({ socketPath, host, port, protocol } as Docker.DockerOptions) : new Docker();
    }
    return this.#docker;
  }

  environment(input: EnvironmentSpecInput): Environment {
    const spec = parseEnvironmentSpec(input, { backend: BACKEND });
    assertSupported(spec, this.capabilities, BACKEND, HINTS);
    const id = newEnvironmentId(this.#options.namePrefix ?? 'berth');
    return new SandboxEnvironment({
      backend: BACKEND,
      id,
      spec,
      transport: new DockerSandbox(this.docker, this.#options, id, spec, this.#imageSource(spec)),
      limiter: this.#limiter,
      capabilities: this.capabilities,
      transfers: this.#options.transfers ?? 'native',
      ...(this.#options.labels ? { labels: this.#options.labels } : {}),
    });
  }

  #imageSource(spec: EnvironmentSpec): DockerImageSource {
    const image = spec.image;
    if (isBuiltImage(image)) return { kind: 'build', build: image.build, builder: (this.#builder ??= new DockerImageBuilder(this.docker, this.#options)) };
    checkPullAuth(image.auth, this.#options, { backend: BACKEND, operation: 'config', factory: 'createDockerBackend' });
    const pull = mirrorImage(image.ref, image.auth, this.#options.mirrors ?? []);
    return { kind: 'pull', image: pull.image, ...(pull.auth ? { auth: pull.auth } : {}) };
  }

  async start(spec: EnvironmentSpecInput, opts: { signal?: AbortSignal } = {}): Promise<Environment> {
    return startAndCleanUp(this.environment(spec), opts);
  }

  async preflight(input?: EnvironmentSpecInput): Promise<PreflightReport> {
    const checks: PreflightCheck[] = [];
    try {
      const version = await this.docker.version();
      checks.push({ name: 'daemon', status: 'ok', message: `Docker ${version.Version} (API ${version.ApiVersion}) is reachable` });
    } catch (error) {
      checks.push(preflightFailure('daemon', mapDaemonError(error, { operation: 'preflight', backend: BACKEND }) ?? error));
      return { backend: BACKEND, ok: false, checks };
    }
    if (input !== undefined) {
      const { env, check } = preflightSpec(() => this.environment(input));
      checks.push(check);
      if (!env) return { backend: BACKEND, ok: false, checks };
      const image = env.spec.image;
      if (isBuiltImage(image)) checks.push(...(await checkBuild(this.docker, this.#options, image.build)));
      else checks.push(await checkImage(this.docker, this.#options, mirrorImage(image.ref, image.auth, this.#options.mirrors ?? [])));
    }
    return { backend: BACKEND, ok: checks.every((c) => c.status !== 'fail'), checks };
  }

  async sweep(opts: SweepOptions = {}): Promise<SweepReport> {
    const sweep = new Sweep(BACKEND, opts);
    const labels = [`${LABEL_MANAGED}=true`, ...(opts.session ? [`${LABEL_SESSION}=${opts.session}`] : [])];
    let containers: Docker.ContainerInfo[];
    try {
      containers = await this.docker.listContainers({ all: true, filters: { label: labels } });
    } catch (error) {
      throw mapDaemonError(error, { operation: 'sweep', backend: BACKEND }) ?? error;
    }
    for (const info of containers) {
      if (!sweep.isOrphan(info.Labels, info.Created * 1000)) continue;
      await sweep.remove({
        name: info.Names[0]?.replace(/^\//, '') ?? info.Id,
        id: info.Id,
        remove: () => this.docker.getContainer(info.Id).remove({ force: true, v: true }),
        failure: (error) => {
          if (statusOf(error) === 404) return undefined;
          const mapped = BerthError.isInstance(error) ? error : mapDaemonError(error, { operation: 'sweep', backend: BACKEND });
          return mapped?.message ?? dockerMessage(error);
        },
      });
    }
    return sweep.report;
  }
}

/** The Docker backend. Does no I/O until an environment is started or preflight/sweep runs. */
export function createDockerBackend(options: DockerBackendOptions = {}): DockerBackend {
  return new DockerBackend(options);
}
