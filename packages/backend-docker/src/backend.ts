import Docker from 'dockerode';
import { BerthError, ConfigError, isBuiltImage, type ImageSource } from '@berth/core';
import {
  LABEL_MANAGED,
  LABEL_SNAPSHOT_OF,
  LABEL_SESSION,
  defineBackend,
  preflightFailure,
  checkFactoryOptions,
  refreshNamesMs,
  resolvePull,
  type DefinedBackend,
  type ManagedResource,
} from '@berth/core/backend-kit';
import { dockerMessage, mapDaemonError, statusOf } from './docker-errors.js';
import { OPTION_NAMES, type DockerBackendOptions } from './options.js';
import { DockerImageBuilder } from './build.js';
import { checkBuild, checkGpus, checkImage } from './preflight.js';
import { GpuSupport } from './gpu.js';
import { imageMountsOf, LABEL_IMAGE_MOUNT } from './image-mounts.js';
import { DockerSandbox, type DockerImageSource } from './sandbox.js';
import { LABEL_VOLUME, removeNetwork } from './services.js';
import { BACKEND, IDENTITY } from './identity.js';
import { CAPABILITIES, HINTS, RENAMED } from './capabilities.js';
import { PROXY_ENFORCEMENT } from './egress-rules.js';
import { BridgeProxy } from './bridge-proxy.js';
import { EgressImage } from './egress-image.js';
import { DEFAULT_CREATION, removalLimiter } from './engine-limits.js';

/** The Docker backend, as `createDockerBackend` makes it. */
export type DockerBackend = DefinedBackend;

/** The engine's address, as dockerode resolves it (options, else DOCKER_HOST, else the default socket). */
function engineAddress({ socketPath, host, port, protocol }: DockerBackendOptions): string {
  if (socketPath) return `unix://${socketPath}`;
  if (host) return `${protocol ?? 'http'}://${host}${port ? `:${port}` : ''}`;
  return process.env.DOCKER_HOST || 'unix:///var/run/docker.sock';
}

/**
 * Kubernetes and Modal take `defaultLifetimeMs` (their service ends a sandbox at a deadline by
 * itself); Docker has no such thing for a container, so it is not in Docker's options, and given
 * anyway (JavaScript, options shared between backends) it is refused rather than silently kept as
 * a promise nothing keeps. `false` (no default lifetime) is what Docker does, and passes.
 */
function refuseDefaultLifetime(options: DockerBackendOptions): void {
  const asked: unknown = (options as { defaultLifetimeMs?: unknown }).defaultLifetimeMs;
  if (asked === undefined || asked === false) return;
  throw new ConfigError({
    operation: 'config',
    backend: BACKEND,
    path: 'options.defaultLifetimeMs',
    message:
      `${IDENTITY.factory} has no defaultLifetimeMs: Docker has no lifetime of its own for a container, so nothing on the engine's side would end it. ` +
      "A dead process's containers are removed by the guardian; what a machine that died whole left, by `berth sweep` (backend.sweep()). " +
      "For a limit on one sandbox, set the spec's timeouts.lifetimeMs: the container's own main process ends it then, berth's machine gone or not",
  });
}

/** The Docker backend. Does no I/O until an environment is started or preflight/sweep runs. */
export function createDockerBackend(options: DockerBackendOptions = {}): DockerBackend {
  checkFactoryOptions(options, { known: OPTION_NAMES, renamed: RENAMED, ...IDENTITY });
  refuseDefaultLifetime(options);
  refreshNamesMs(options, IDENTITY);
  let client: Docker | undefined;
  const docker = (): Docker => {
    const { socketPath, host, port, protocol } = options;
    return (client ??= socketPath || host ? new Docker({ socketPath, host, port, protocol } as Docker.DockerOptions) : new Docker());
  };
  // Shared by every environment of this backend, so concurrent starts of one context share a build.
  let builder: DockerImageBuilder | undefined;
  // Whether the engine has an NVIDIA runtime, asked once for every environment of this backend.
  const gpus = new GpuSupport(docker);
  // Teardowns of every environment of this backend queue here, as creations queue in the kit's limiter.
  const removals = removalLimiter();
  // The image that writes allowlists' packet filters, made once on first use unless options.egressImage names one.
  // berth's egress proxy, for allowlists with names or wildcards: made on first use too.
  const egress = { image: new EgressImage(docker, options), proxy: new BridgeProxy(docker, options) };
  const capabilities = {
    ...CAPABILITIES,
    imageAuth: CAPABILITIES.imageAuth.filter((k) => k !== 'aws' || options.ecrLogin !== undefined),
    ...(options.egressProxy ? { networkAllowlist: PROXY_ENFORCEMENT } : {}),
  };
  const ctx = (operation: 'preflight' | 'sweep') => ({ operation, backend: BACKEND });

  const imageSource = (image: ImageSource): DockerImageSource => {
    if (isBuiltImage(image)) return { kind: 'build', build: image.build, builder: (builder ??= new DockerImageBuilder(docker(), options)) };
    return { kind: 'pull', ...resolvePull(image, options, { ...IDENTITY, operation: 'config' }) };
  };

  const removalFailure = (error: unknown): string | undefined => {
    if (statusOf(error) === 404) return undefined;
    // Another remover got there first (a guardian, another sweep): it is going, not a failure.
    if (statusOf(error) === 409 && /already in progress/i.test(dockerMessage(error))) return undefined;
    const mapped = BerthError.isInstance(error) ? error : mapDaemonError(error, ctx('sweep'));
    return mapped?.message ?? dockerMessage(error);
  };

  return defineBackend({
    name: BACKEND,
    capabilities,
    hints: HINTS,
    options,
    defaultCreation: DEFAULT_CREATION,
    transfers: options.transfers ?? 'native',
    target: () => engineAddress(options),
    // Built JS of this package (from src/ and dist/ alike): the guardian process cannot run TypeScript.
    guardian: () => {
      const { socketPath, host, port, protocol } = options;
      return { module: new URL('../dist/guardian.js', import.meta.url), config: { socketPath, host, port, protocol } };
    },
    transport: (id, spec) =>
      new DockerSandbox(docker(), options, id, spec, imageSource(spec.image), gpus, removals, egress, imageSource, imageMountsOf(spec, options)),
    async checkApi() {
      try {
        const version = await docker().version();
        return [{ name: 'daemon', status: 'ok', message: `Docker ${version.Version} (API ${version.ApiVersion}) is reachable` }];
      } catch (error) {
        return [preflightFailure('daemon', mapDaemonError(error, ctx('preflight')) ?? error)];
      }
    },
    async checkSpec(spec) {
      if (!spec) return [];
      const image = spec.image;
      const gpuChecks = (spec.resources.gpus ?? 0) > 0 ? [await checkGpus(gpus, spec.resources.gpus ?? 0)] : [];
      // Each image mount's image, pulled with its own credentials at start: checked the same way.
      const mountChecks = [];
      for (const mount of imageMountsOf(spec, options)) mountChecks.push(await checkImage(docker(), options, mount));
      if (isBuiltImage(image)) return [...gpuChecks, ...(await checkBuild(docker(), options, image.build)), ...mountChecks];
      return [...gpuChecks, await checkImage(docker(), options, resolvePull(image, options, { ...IDENTITY, operation: 'config' })), ...mountChecks];
    },
    async listManaged({ session }) {
      const labels = [`${LABEL_MANAGED}=true`, ...(session ? [`${LABEL_SESSION}=${session}`] : [])];
      let containers: Docker.ContainerInfo[];
      let volumes: Docker.VolumeInspectInfo[];
      let snapshots: Docker.ImageInfo[];
      let networks: Docker.NetworkInspectInfo[];
      try {
        containers = await docker().listContainers({ all: true, filters: { label: labels } });
        // Services' networks (services.ts), after the containers on them.
        networks = await docker().listNetworks({ filters: { label: labels } });
        // Snapshots (env.snapshot()), after the containers that may run from them.
        snapshots = await docker().listImages({ filters: { label: [...labels, LABEL_SNAPSHOT_OF] } });
        // Image mounts' volumes, after the containers that use them (removing a container frees its volumes).
        volumes = [
          ...((await docker().listVolumes({ filters: { label: [...labels, LABEL_IMAGE_MOUNT] } })).Volumes ?? []),
          // A sandbox's own volumes, shared with its services (services.ts).
          ...((await docker().listVolumes({ filters: { label: [...labels, LABEL_VOLUME] } })).Volumes ?? []),
        ];
      } catch (error) {
        throw mapDaemonError(error, ctx('sweep')) ?? error;
      }
      const volumeResources = volumes.map(
        (volume): ManagedResource => ({
          name: `volume/${volume.Name}`,
          labels: volume.Labels ?? {},
          ...((volume as { CreatedAt?: string }).CreatedAt ? { createdAtMs: Date.parse((volume as { CreatedAt?: string }).CreatedAt!) } : {}),
          remove: () => docker().getVolume(volume.Name).remove(),
          failure: removalFailure,
        }),
      );
      return [
        ...containers.map(
          (info): ManagedResource => ({
            name: info.Names[0]?.replace(/^\//, '') ?? info.Id,
            id: info.Id,
            labels: info.Labels,
            createdAtMs: info.Created * 1000,
            remove: () => docker().getContainer(info.Id).remove({ force: true, v: true }),
            failure: removalFailure,
          }),
        ),
        ...volumeResources,
        ...networks.map(
          (network): ManagedResource => ({
            name: `network/${network.Name}`,
            id: network.Id,
            labels: network.Labels ?? {},
            ...(network.Created ? { createdAtMs: Date.parse(network.Created) } : {}),
            // Removed with its containers, at once: while one is still going the engine says it has active endpoints.
            remove: () => removeNetwork(docker(), network.Id),
            failure: removalFailure,
          }),
        ),
        ...snapshots.map((image): ManagedResource => {
          // A snapshot removed while sandboxes used it is untagged ('<none>:<none>'), not gone: it is
          // removed by id once they are; while one still uses it (409) a later sweep takes it.
          const ref = image.RepoTags?.find((tag) => tag !== '<none>:<none>');
          return {
            name: `image/${ref ?? image.Id}`,
            id: image.Id,
            labels: image.Labels ?? {},
            createdAtMs: image.Created * 1000,
            remove: () => (ref ? docker().getImage(ref).remove({ force: true }) : docker().getImage(image.Id).remove()),
            failure: (error) => (!ref && statusOf(error) === 409 ? undefined : removalFailure(error)),
          };
        }),
      ];
    },
  });
}
