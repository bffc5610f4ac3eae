import { describeImage, isAllowlist, isBuiltImage, type EnvironmentSpec, type PreflightCheck } from '@berth/core';
import {
  CreationLimiter,
  LABEL_MANAGED,
  LABEL_SESSION,
  defaultLifetimeMs,
  refreshNamesMs,
  defineBackend,
  parseEnvironmentSpec,
  preflightFailure,
  checkFactoryOptions,
  type DefinedBackend,
  type ManagedResource,
} from '@berth/core/backend-kit';
import { BACKEND, Cluster, IDENTITY, type K8sTarget } from './cluster.js';
import { apiMessage, idempotent, mapApiError, statusOf } from './k8s-errors.js';
import { OPTION_NAMES, checkEgressProxyOption, checkKubeconfigOption, type K8sBackendOptions } from './options.js';
import { checkApi, checkImage, checkNetworkPolicy, checkNodes, checkRbac } from './preflight.js';
import { podManifest } from './pod-manifest.js';
import { LABEL_PULL_SECRET, PullSecrets } from './pull-secrets.js';
import { K8sSandbox } from './sandbox.js';
import { podImages } from './pod-images.js';
import { CAPABILITIES, HINTS, RENAMED, networkCapabilities } from './capabilities.js';
import { PodNetwork } from './pod-network.js';
import { PodInformer } from './pod-informer.js';
import { EgressProxyPod } from './egress-proxy-pod.js';

/** Items per page of sweep's lists. */
const PAGE = 500;

/** Every item of a paginated list, each mapped as its page arrives. */
async function pages<I, R>(
  list: (page: { limit: number; _continue?: string }) => Promise<{ items: I[]; metadata?: { _continue?: string } }>,
  map: (item: I) => R,
): Promise<R[]> {
  const out: R[] = [];
  let next: string | undefined;
  do {
    const token = next;
    const page = await idempotent(() => list({ limit: PAGE, ...(token ? { _continue: token } : {}) }));
    for (const item of page.items) out.push(map(item));
    next = page.metadata?._continue || undefined;
  } while (next);
  return out;
}

/** The Kubernetes backend; `resolveTarget()` gives `target` in parts (server, namespace, and why that namespace). */
export type K8sBackend = DefinedBackend<{ resolveTarget(): K8sTarget }>;

/** The Kubernetes backend. Does no I/O until an environment is started or preflight/sweep runs. */
export function createK8sBackend(options: K8sBackendOptions = {}): K8sBackend {
  checkFactoryOptions(options, { known: OPTION_NAMES, renamed: RENAMED, ...IDENTITY });
  checkKubeconfigOption(options.kubeconfig);
  checkEgressProxyOption(options.egressProxy);
  // Checked here, before any I/O; podManifest applies it.
  defaultLifetimeMs(options, { ...IDENTITY, offAllowed: true });
  refreshNamesMs(options, IDENTITY);
  // The API client, made on first use: the factory does no I/O.
  let client: Cluster | undefined;
  const cluster = () => (client ??= new Cluster(options));
  let pullSecrets: PullSecrets | undefined;
  const network = new PodNetwork(cluster, options);
  const informer = new PodInformer(cluster);
  const egressProxy = new EgressProxyPod(cluster, options);
  const removals = new CreationLimiter(options.removal ?? { maxConcurrent: 64 });
  const images = (spec: EnvironmentSpec) => {
    const image = spec.image;
    return podImages(spec, isBuiltImage(image) ? undefined : image, options, (pullSecrets ??= new PullSecrets(cluster())));
  };

  /** What the pod needs: a build, every image it pulls (with every pull secret it names), a node that can take it. */
  const checkSpec = async (input: EnvironmentSpec | undefined): Promise<PreflightCheck[]> => {
    const checks: PreflightCheck[] = [];
    const spec = input ?? parseEnvironmentSpec({ image: 'berth-preflight', network: 'public' }, { backend: BACKEND });
    if (input) {
      if (isBuiltImage(input.image))
        checks.push({ name: 'build', status: 'ok', message: `${describeImage(input.image)} will be built by ${options.builder?.name ?? '?'} at start` });
      const pod = images(input);
      for (const pull of [...(pod.main ? [pod.main] : []), ...pod.mounts]) checks.push(await checkImage(cluster(), options, pull, pod.pullSecrets));
    }
    // The pod as start would make it (tolerations, node selector, resources, patchPod), asked of the nodes.
    const manifest = podManifest({
      name: 'berth-preflight',
      namespace: cluster().namespace,
      image: 'berth-preflight',
      spec,
      labels: { ...(options.labels ?? {}) },
      pullSecrets: [],
      options,
    });
    checks.push(await checkNodes(cluster(), manifest));
    if (input && (input.network === 'none' || isAllowlist(input.network) || input.networkSwitch)) {
      if (isBuiltImage(input.image) && network.verdict === undefined)
        checks.push({
          name: 'network-policy',
          status: 'warn',
          message: 'whether the cluster enforces NetworkPolicy is proved by the first pod, after the build',
        });
      // A pod of the spec's image (no mounts) on network 'none': its start proves enforcement, or is refused.
      else
        checks.push(
          await checkNetworkPolicy(network, () =>
            self.start({ ...input, network: 'none', networkSwitch: false, mounts: [] }).then(async (env) => void (await env.teardown())),
          ),
        );
    }
    return checks;
  };

  const listManaged = async ({ session }: { session?: string }): Promise<ManagedResource[]> => {
    const { core, namespace } = cluster();
    const bySession = session ? `,${LABEL_SESSION}=${session}` : '';
    const remove = (what: string, del: () => Promise<unknown>): Pick<ManagedResource, 'remove' | 'failure'> => ({
      remove: () => idempotent(del),
      failure: (error) =>
        statusOf(error) === 404 ? undefined : what === 'pod' ? (mapApiError(error, { operation: 'sweep' })?.message ?? apiMessage(error)) : apiMessage(error),
    });
    try {
      // Pull secrets whose process is gone (a crash between a start and its teardown), then pods;
      // page by page (10,000 pods are one ~37 MB answer unpaged), each page reduced to what sweep needs.
      const secrets = await pages(
        (page) => core.listNamespacedSecret({ namespace, labelSelector: `${LABEL_PULL_SECRET}=true${bySession}`, ...page }),
        (secret) => {
          const name = secret.metadata?.name ?? '';
          return { name: `secret/${name}`, labels: secret.metadata?.labels ?? {}, ...remove('secret', () => core.deleteNamespacedSecret({ name, namespace })) };
        },
      );
      const pods = await pages(
        (page) => core.listNamespacedPod({ namespace, labelSelector: `${LABEL_MANAGED}=true${bySession}`, ...page }),
        (pod) => {
          const name = pod.metadata?.name ?? '';
          const created = pod.metadata?.creationTimestamp ? new Date(pod.metadata.creationTimestamp).getTime() : undefined;
          return {
            name,
            labels: pod.metadata?.labels ?? {},
            ...(created ? { createdAtMs: created } : {}),
            ...remove('pod', () => core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 })),
          };
        },
      );
      return [...secrets, ...pods];
    } catch (error) {
      throw mapApiError(error, { operation: 'sweep' }) ?? error;
    }
  };

  const self: K8sBackend = defineBackend(
    {
      name: BACKEND,
      // Builds need somewhere the cluster can pull from: claimed only with a builder.
      capabilities: { ...CAPABILITIES, imageBuild: options.builder !== undefined, ...networkCapabilities(options) },
      hints: HINTS,
      options,
      // Enough starts in flight to keep a cluster's scheduler busy (its rate, not berth's, is the limit);
      // no fixed rate: a 429 from the API server's priority and fairness slows the limiter instead.
      defaultCreation: { maxConcurrent: 128 },
      transfers: 'exec',
      target: () => `${cluster().server} namespace ${cluster().namespace}`,
      // Built JS of this package (from src/ and dist/ alike): the guardian process cannot run TypeScript.
      guardian: () => ({
        module: new URL('../dist/guardian.js', import.meta.url),
        config: { kubeconfig: cluster().kc.exportConfig(), namespace: cluster().namespace },
      }),
      transport: (id, spec) => new K8sSandbox({ cluster: cluster(), options, removals, network, informer, egressProxy }, id, spec, images(spec)),
      async checkApi() {
        let c: Cluster;
        try {
          c = cluster();
        } catch (error) {
          // No kubeconfig, or one without a cluster: the ConfigError says what to do.
          return [preflightFailure('kubeconfig', error)];
        }
        const api = await checkApi(c);
        if (api.status === 'fail') return [api];
        try {
          return [api, await checkRbac(c)];
        } catch (error) {
          return [api, preflightFailure('rbac', mapApiError(error, { operation: 'preflight' }) ?? error)];
        }
      },
      checkSpec,
      listManaged,
      // A dead runner's 10,000 pods: deletes in parallel beat one deletecollection (the API server
      // deletes a collection one by one, ~43/s on the scale bed, and gives up at its request timeout).
      sweepConcurrency: 64,
    },
    { resolveTarget: (): K8sTarget => cluster().target() },
  );
  return self;
}
