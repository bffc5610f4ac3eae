import {
  SPECIFICATION_VERSION,
  describeImage,
  isBuiltImage,
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
import { BACKEND, Cluster, type K8sTarget } from './cluster.js';
import { apiMessage, idempotent, mapApiError, statusOf } from './k8s-errors.js';
import type { K8sBackendOptions } from './options.js';
import { checkApi, checkImage, checkNodes, checkRbac } from './preflight.js';
import { podManifest } from './pod-manifest.js';
import { LABEL_PULL_SECRET, PullSecrets } from './pull-secrets.js';
import { K8sSandbox } from './sandbox.js';
import { podImages } from './pod-images.js';

const CAPABILITIES: Capabilities = {
  gpus: true,
  // 'none' needs a cluster that enforces NetworkPolicy (see the README): not claimed by default.
  networkModes: ['public'],
  networkSwitch: false,
  imageAuth: ['basic', 'identityToken', 'secretName', 'dockerConfig', 'aws'],
  mounts: ['image', 'bind'],
  imageBuild: false,
  // The exec subresource has no user: every command runs as the container's user.
  execUser: false,
  // Not yet: the exec subresource can do it (tty=true, and sizes on its resize channel, 4), but the
  // exec socket here speaks only the stdin/stdout/stderr/error channels.
  tty: false,
  resourceLimits: { cpus: true, memory: true, storage: true },
};

const HINTS = {
  network: "run the task with network 'public', or enforce NetworkPolicy in the cluster (see @berth/backend-k8s's README)",
  imageBuild: "pass options.builder (createRegistryImageBuilder from @berth/backend-docker builds with the local engine and pushes to a registry the cluster pulls from), or build and push the image and pass its reference",
};

export class K8sBackend implements Backend {
  readonly specificationVersion = SPECIFICATION_VERSION;
  readonly name = BACKEND;
  readonly capabilities: Capabilities;
  readonly #options: K8sBackendOptions;
  readonly #limiter: CreationLimiter;
  readonly #removals: CreationLimiter;
  #cluster: Cluster | undefined;
  #pullSecrets: PullSecrets | undefined;

  constructor(options: K8sBackendOptions) {
    this.#options = options;
    // Builds need somewhere the cluster can pull from: claimed only with a builder.
    this.capabilities = { ...CAPABILITIES, imageBuild: options.builder !== undefined };
    this.#limiter = new CreationLimiter(options.creation ?? { maxConcurrent: 16, perSecond: 20 });
    this.#removals = new CreationLimiter(options.removal ?? { maxConcurrent: 16, perSecond: 50 });
  }

  /** The API server and the namespace pods go into (reads the kubeconfig; no network I/O). */
  get target(): string {
    return `${this.cluster.server} namespace ${this.cluster.namespace}`;
  }

  /** The API client, made on first use: the factory does no I/O. */
  get cluster(): Cluster {
    return (this.#cluster ??= new Cluster(this.#options));
  }

  /** `target`, in parts: the API server, the namespace and why that one. Reads the kubeconfig, calls nothing. */
  resolveTarget(): K8sTarget {
    return this.cluster.target();
  }

  environment(input: EnvironmentSpecInput): Environment {
    const spec = parseEnvironmentSpec(input, { backend: BACKEND });
    assertSupported(spec, this.capabilities, BACKEND, HINTS);
    const id = newEnvironmentId(this.#options.namePrefix ?? 'berth');
    return new SandboxEnvironment({
      backend: BACKEND,
      id,
      spec,
      transport: new K8sSandbox({ cluster: this.cluster, options: this.#options, removals: this.#removals }, id, spec, this.#podImages(spec)),
      limiter: this.#limiter,
      capabilities: this.capabilities,
      transfers: 'exec',
    });
  }

  #podImages(spec: EnvironmentSpec) {
    const image = spec.image;
    return podImages(spec, isBuiltImage(image) ? undefined : image, this.#options, (this.#pullSecrets ??= new PullSecrets(this.cluster)));
  }

  async start(spec: EnvironmentSpecInput, opts: { signal?: AbortSignal } = {}): Promise<Environment> {
    return startAndCleanUp(this.environment(spec), opts);
  }

  async preflight(input?: EnvironmentSpecInput): Promise<PreflightReport> {
    const checks: PreflightCheck[] = [];
    let cluster: Cluster;
    try {
      cluster = this.cluster;
    } catch (error) {
      // No kubeconfig, or one without a cluster: the ConfigError says what to do.
      checks.push(preflightFailure('kubeconfig', error));
      return { backend: BACKEND, ok: false, checks };
    }
    checks.push(await checkApi(cluster));
    if (checks[0]!.status === 'fail') return { backend: BACKEND, ok: false, checks };
    try {
      checks.push(await checkRbac(this.cluster));
    } catch (error) {
      checks.push(preflightFailure('rbac', mapApiError(error, { operation: 'preflight' }) ?? error));
    }
    let spec = parseEnvironmentSpec({ image: 'berth-preflight', network: 'public' }, { backend: BACKEND });
    if (input !== undefined) {
      const { env, check } = preflightSpec(() => this.environment(input));
      checks.push(check);
      if (!env) return { backend: BACKEND, ok: false, checks };
      if (isBuiltImage(env.spec.image)) {
        checks.push({ name: 'build', status: 'ok', message: `${describeImage(env.spec.image)} will be built by ${this.#options.builder?.name ?? '?'} at start` });
      }
      // Every image the pod pulls (its own and its image mounts'), with every pull secret the pod names.
      const images = this.#podImages(env.spec);
      for (const { image: ref, auth } of [...(images.main ? [images.main] : []), ...images.mounts]) {
        checks.push(await checkImage(this.cluster, this.#options, ref, auth, images.pullSecrets));
      }
      spec = env.spec;
    }
    // The pod as start would make it (tolerations, node selector, resources, patchPod), asked of the nodes.
    const { namespace } = this.cluster;
    const pod = podManifest({ name: 'berth-preflight', namespace, image: 'berth-preflight', spec, labels: { ...(this.#options.labels ?? {}) }, pullSecrets: [], options: this.#options });
    checks.push(await checkNodes(this.cluster, pod));
    return { backend: BACKEND, ok: checks.every((c) => c.status !== 'fail'), checks };
  }

  async sweep(opts: SweepOptions = {}): Promise<SweepReport> {
    const sweep = new Sweep(BACKEND, opts);
    const { core, namespace } = this.cluster;
    const labelSelector = [`${LABEL_MANAGED}=true`, ...(opts.session ? [`${LABEL_SESSION}=${opts.session}`] : [])].join(',');
    let pods;
    try {
      pods = await idempotent(() => core.listNamespacedPod({ namespace, labelSelector }));
    } catch (error) {
      throw mapApiError(error, { operation: 'sweep' }) ?? error;
    }
    // Pull secrets whose process is gone (a crash between a start and its teardown).
    try {
      const secrets = await idempotent(() => core.listNamespacedSecret({ namespace, labelSelector: `${LABEL_PULL_SECRET}=true${opts.session ? `,${LABEL_SESSION}=${opts.session}` : ''}` }));
      for (const secret of secrets.items) {
        const name = secret.metadata?.name ?? '';
        if (!sweep.isOrphan(secret.metadata?.labels ?? {})) continue;
        await sweep.remove({
          name: `secret/${name}`,
          remove: () => idempotent(() => core.deleteNamespacedSecret({ name, namespace })),
          failure: (error) => (statusOf(error) === 404 ? undefined : apiMessage(error)),
        });
      }
    } catch (error) {
      throw mapApiError(error, { operation: 'sweep' }) ?? error;
    }
    for (const pod of pods.items) {
      const name = pod.metadata?.name ?? '';
      const created = pod.metadata?.creationTimestamp ? new Date(pod.metadata.creationTimestamp).getTime() : undefined;
      if (!sweep.isOrphan(pod.metadata?.labels ?? {}, created)) continue;
      await sweep.remove({
        name,
        remove: () => idempotent(() => core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 })),
        failure: (error) => (statusOf(error) === 404 ? undefined : (mapApiError(error, { operation: 'sweep' })?.message ?? apiMessage(error))),
      });
    }
    return sweep.report;
  }
}

/** The Kubernetes backend. Does no I/O until an environment is started or preflight/sweep runs. */
export function createK8sBackend(options: K8sBackendOptions = {}): K8sBackend {
  return new K8sBackend(options);
}
