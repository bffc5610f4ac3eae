import { hostname } from 'node:os';
import Docker from 'dockerode';
import {
  BerthError,
  CapabilityError,
  ConfigError,
  ImagePullError,
  LABEL_CREATED,
  LABEL_MANAGED,
  LABEL_OWNER_HOST,
  LABEL_OWNER_PID,
  LABEL_SESSION,
  SPECIFICATION_VERSION,
  mirrorImage,
  newEnvironmentId,
  parseEnvironmentSpec,
  serializeError,
  type Backend,
  type Capabilities,
  type Environment,
  type EnvironmentSpecInput,
  type PreflightCheck,
  type PreflightReport,
  type SweepReport,
} from '@berth/core';
import { dockerMessage, mapDaemonError, pullError, statusOf } from './docker-errors.js';
import { DockerEnvironment } from './environment.js';
import type { DockerBackendOptions } from './options.js';
import { resolveDockerAuth } from './pull.js';

const NAME = 'docker';

const CAPABILITIES: Capabilities = {
  gpus: false,
  networkModes: ['public', 'none'],
  imageAuth: ['basic', 'identityToken', 'secretName', 'dockerConfig', 'aws'],
  mounts: ['bind'],
  resourceLimits: { cpus: true, memory: true, storage: false },
};

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class DockerBackend implements Backend {
  readonly specificationVersion = SPECIFICATION_VERSION;
  readonly name = NAME;
  readonly capabilities: Capabilities;
  readonly #options: DockerBackendOptions;
  #docker: Docker | undefined;

  constructor(options: DockerBackendOptions) {
    this.#options = options;
    this.capabilities = {
      ...CAPABILITIES,
      imageAuth: CAPABILITIES.imageAuth.filter((k) => k !== 'aws' || options.ecrLogin !== undefined),
    };
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
    const spec = parseEnvironmentSpec(input, { backend: NAME });
    const ctx = { operation: 'config' as const, backend: NAME };
    if ((spec.resources.gpus ?? 0) > 0) {
      throw new CapabilityError({ ...ctx, capability: 'gpus', message: 'the Docker backend does not provide GPUs; use a backend that does, or set resources.gpus to 0' });
    }
    if (spec.resources.storageMb !== undefined) {
      // Not enforced portably by Docker (needs xfs quotas); refusing beats silently ignoring.
      throw new CapabilityError({ ...ctx, capability: 'resources.storage', message: 'the Docker backend cannot limit storage (resources.storageMb); leave it unset for Docker' });
    }
    const imageMount = spec.mounts.find((m) => m.type === 'image');
    if (imageMount) {
      throw new CapabilityError({ ...ctx, capability: 'mounts.image', message: `the Docker backend cannot mount an image at ${imageMount.target}; use a bind mount of an extracted copy` });
    }
    if (spec.image.auth && 'aws' in spec.image.auth && !this.#options.ecrLogin) {
      throw new CapabilityError({ ...ctx, capability: 'imageAuth.aws', message: 'ECR auth needs createDockerBackend({ ecrLogin }); or pass { username: "AWS", password } from aws ecr get-login-password' });
    }
    if (spec.image.auth && 'secretName' in spec.image.auth && !this.#options.registrySecrets?.[spec.image.auth.secretName]) {
      throw new ConfigError({
        ...ctx,
        path: 'spec.image.auth.secretName',
        message: `no registry secret named "${spec.image.auth.secretName}": pass createDockerBackend({ registrySecrets: { "${spec.image.auth.secretName}": { username, password } } })`,
      });
    }
    const pull = mirrorImage(spec.image.ref, spec.image.auth, this.#options.mirrors ?? []);
    return new DockerEnvironment(this.docker, this.#options, spec, newEnvironmentId(this.#options.namePrefix ?? 'berth'), pull);
  }

  async start(spec: EnvironmentSpecInput, opts: { signal?: AbortSignal } = {}): Promise<Environment> {
    const env = this.environment(spec);
    try {
      await env.start(opts);
    } catch (error) {
      await env.teardown().catch(() => undefined);
      throw error;
    }
    return env;
  }

  async preflight(input?: EnvironmentSpecInput): Promise<PreflightReport> {
    const checks: PreflightCheck[] = [];
    const failed = (name: string, error: unknown, message?: string): PreflightCheck => ({
      name,
      status: 'fail',
      message: message ?? (error instanceof Error ? error.message : String(error)),
      error: serializeError(error),
    });
    try {
      const version = await this.docker.version();
      checks.push({ name: 'daemon', status: 'ok', message: `Docker ${version.Version} (API ${version.ApiVersion}) is reachable` });
    } catch (error) {
      const mapped = mapDaemonError(error, { operation: 'preflight', backend: NAME }) ?? error;
      checks.push(failed('daemon', mapped));
      return { backend: NAME, ok: false, checks };
    }
    if (input !== undefined) {
      let env: DockerEnvironment;
      try {
        env = this.environment(input) as DockerEnvironment;
        checks.push({ name: 'spec', status: 'ok', message: 'the spec is valid and the backend supports it' });
      } catch (error) {
        checks.push(failed('spec', error));
        return { backend: NAME, ok: false, checks };
      }
      checks.push(await this.#checkImage(env));
    }
    return { backend: NAME, ok: checks.every((c) => c.status !== 'fail'), checks };
  }

  /** Is the image present, or pullable with the credentials given, without pulling it? */
  async #checkImage(env: DockerEnvironment): Promise<PreflightCheck> {
    const { image, auth: pullAuth } = mirrorImage(env.spec.image.ref, env.spec.image.auth, this.#options.mirrors ?? []);
    const ctx = { operation: 'preflight' as const, backend: NAME };
    const policy = this.#options.pullPolicy ?? 'if-missing';
    let present: boolean;
    try {
      await this.docker.getImage(image.canonical).inspect();
      present = true;
    } catch (error) {
      if (statusOf(error) !== 404) {
        return { name: 'image', status: 'fail', message: dockerMessage(error), error: serializeError(mapDaemonError(error, ctx) ?? error) };
      }
      present = false;
    }
    // The check follows the pull policy: what start() will do is what is checked.
    if (present && policy !== 'always') return { name: 'image', status: 'ok', message: `${image.original} is present locally` };
    if (!present && policy === 'never') {
      const error = new ImagePullError({ ...ctx, image: image.original, reason: 'not_found', message: `image ${image.original} is not present locally and pullPolicy is 'never'` });
      return { name: 'image', status: 'fail', message: error.message, error: serializeError(error) };
    }
    let auth;
    try {
      auth = await resolveDockerAuth(image, pullAuth, this.#options, ctx);
    } catch (error) {
      return { name: 'image', status: 'fail', message: error instanceof Error ? error.message : String(error), error: serializeError(error) };
    }
    try {
      // The engine's distribution endpoint asks the registry for the manifest: auth and existence
      // are checked, nothing is downloaded.
      await this.docker.getImage(image.canonical).distribution(auth ? { authconfig: auth } : {});
      return { name: 'image', status: 'ok', message: `${image.original} is pullable${auth ? ' with the given credentials' : ' anonymously'}` };
    } catch (error) {
      const mapped = (statusOf(error) === undefined ? mapDaemonError(error, ctx) : undefined) ??
        pullError(dockerMessage(error), { ...ctx, image: image.original, hadCredentials: auth !== undefined, cause: error });
      return { name: 'image', status: 'fail', message: mapped.message, error: serializeError(mapped) };
    }
  }

  async sweep(opts: { olderThanMs?: number; session?: string } = {}): Promise<SweepReport> {
    const report: SweepReport = { backend: NAME, removed: [], failed: [] };
    const labels = [`${LABEL_MANAGED}=true`];
    if (opts.session) labels.push(`${LABEL_SESSION}=${opts.session}`);
    let containers: Docker.ContainerInfo[];
    try {
      containers = await this.docker.listContainers({ all: true, filters: { label: labels } });
    } catch (error) {
      throw mapDaemonError(error, { operation: 'sweep', backend: NAME }) ?? error;
    }
    const here = hostname();
    const now = Date.now();
    for (const info of containers) {
      const pid = Number(info.Labels[LABEL_OWNER_PID]);
      const created = Number(info.Labels[LABEL_CREATED]) || info.Created * 1000;
      const sameHost = info.Labels[LABEL_OWNER_HOST] === here && Number.isInteger(pid) && pid > 0;
      const oldEnough = opts.olderThanMs !== undefined && now - created >= opts.olderThanMs;
      // On this host an owner's liveness is known: a dead owner's containers are orphans. From
      // another host it is not, and only age (olderThanMs) can say a container is abandoned.
      const orphan = sameHost ? !processAlive(pid) || oldEnough : oldEnough;
      if (!orphan) continue;
      try {
        await this.docker.getContainer(info.Id).remove({ force: true, v: true });
        report.removed.push(info.Names[0]?.replace(/^\//, '') ?? info.Id);
      } catch (error) {
        if (statusOf(error) === 404) continue;
        const mapped = BerthError.isInstance(error) ? error : mapDaemonError(error, { operation: 'sweep', backend: NAME });
        report.failed.push({ id: info.Id, message: mapped?.message ?? dockerMessage(error) });
      }
    }
    return report;
  }
}

/** The Docker backend. Does no I/O until an environment is started or preflight/sweep runs. */
export function createDockerBackend(options: DockerBackendOptions = {}): DockerBackend {
  return new DockerBackend(options);
}
