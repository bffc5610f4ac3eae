import type { KubeConfig, V1Pod, V1Toleration } from '@kubernetes/client-node';
import type { EnvironmentSpec, ImageBuilder } from '@berth/core';
import { ConfigError } from '@berth/core';
import { BACKEND, IDENTITY } from './identity.js';
import {
  checkOptionNames,
  COMMON_OPTION_NAMES,
  optionNames,
  type AllowlistNamesOption,
  type CommonBackendOptions,
  type CreationLimits,
  type DefaultLifetimeOption,
  type ProbeRegistriesOption,
  type PullCredentialSources,
  type PullPolicyOption,
} from '@berth/core/backend-kit';

/** Where the cluster is: a loaded KubeConfig, or how to load one. */
export type KubeconfigSource =
  | KubeConfig
  | {
      /** A kubeconfig file; default: KUBECONFIG, else ~/.kube/config, else in-cluster. */
      file?: string;
      /** A context of that file; default: its current context. */
      context?: string;
      /** Use the pod's service account (running inside the cluster). */
      inCluster?: boolean;
    };

/** Network 'none' and switching (a deny-all NetworkPolicy the cluster must enforce; see the README). */
export interface NetworkPolicyOptions {
  /**
   * Does the cluster enforce NetworkPolicy? Default: found out once per backend instance, by the
   * first pod that needs it (cut off under the deny-all policy, then reaching the probe address
   * without it, before any command of the task runs). true: trusted, not proved. false: network
   * 'none' and switching are refused at environment().
   */
  enforced?: boolean;
  /**
   * An address every public pod reaches, for the checks from inside the pod. Default: the API
   * server's service (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT in the pod).
   */
  probe?: { host: string; port: number };
  /** How long a network change may take to hold inside the pod, in ms. Default 30 s. */
  waitMs?: number;
}

/**
 * The common options (mirrors; creation, default 128 starts in flight; labels and
 * namePrefix on pods; dockerConfigEnv), pullPolicy, probeRegistries, defaultLifetimeMs (the pod's
 * activeDeadlineSeconds when the spec sets no lifetime: default 24 h, false for none), and the
 * cluster's own.
 */
export interface K8sBackendOptions
  extends CommonBackendOptions,
    PullCredentialSources,
    PullPolicyOption,
    ProbeRegistriesOption,
    DefaultLifetimeOption,
    AllowlistNamesOption {
  kubeconfig?: KubeconfigSource | string;
  /** Every call is namespaced here. Default: the context's namespace, else 'default'. */
  namespace?: string;
  /** Existing pull secrets of the namespace, added to every pod. */
  imagePullSecrets?: readonly string[];
  nodeSelector?: Record<string, string>;
  /**
   * The node label that names a node's GPU model, for `resources.gpuTypes` (a required node
   * affinity, In over the types' values). Default 'nvidia.com/gpu.product' (NVIDIA's GPU feature
   * discovery sets it, e.g. to 'NVIDIA-H100-80GB-HBM3').
   */
  gpuTypeLabel?: string;
  /**
   * The label value(s) for a GPU type as specs and harbor name it, e.g.
   * `{ H100: 'NVIDIA-H100-80GB-HBM3', A100: ['NVIDIA-A100-SXM4-40GB', 'NVIDIA-A100-SXM4-80GB'] }`.
   * A type not listed is used as the label value as written.
   */
  gpuTypeValues?: Readonly<Record<string, string | readonly string[]>>;
  tolerations?: readonly V1Toleration[];
  runtimeClassName?: string;
  /** Default: no service account token in the pod (automountServiceAccountToken: false). */
  serviceAccountName?: string;
  /** Annotations on every pod. */
  annotations?: Record<string, string>;
  /** Bound pod deletions per backend instance, apart from creations. Default: 16 at once, 50 per second. */
  removal?: CreationLimits;
  /** Last word on the pod before it is created, for anything the options do not cover. */
  patchPod?: (pod: V1Pod, spec: EnvironmentSpec) => V1Pod;
  /**
   * A WebSocket ping on every exec connection this often, so a command that prints nothing for a
   * long time is not cut by an idle timeout between berth and the API server (load balancers often
   * cut after 60–350 s). Default 30 s.
   */
  execKeepAliveMs?: number;
  networkPolicy?: NetworkPolicyOptions;
  /**
   * Builds `image: { build }` specs somewhere the cluster can pull from (a cluster cannot build from
   * a local directory), e.g. `createRegistryImageBuilder` from @berth/backend-docker. Without it,
   * a build spec is a CapabilityError.
   */
  builder?: ImageBuilder;
  /**
   * Allowlist names and `*.domain` wildcards matched by name at berth's egress proxy rather than
   * by the addresses berth resolves: a pod in the namespace (made on first use, deleted when the
   * last sandbox that needs it is removed) that is the sandbox's only resolver, answers allowed
   * names with its own address, and lets TLS (443) through by server name and HTTP (80) by Host,
   * to the name as it resolves it. Default false. `image`: the proxy's, any with node >= 20 on
   * PATH (default node:20-alpine; a mirror of it where the cluster cannot pull Docker Hub).
   * `nameservers`: what the proxy resolves names with (host or host:port), instead of the
   * cluster's DNS. Other ports to allowed names are not let through, and options.resolveHost does
   * not apply to names the proxy matches.
   */
  egressProxy?: boolean | EgressProxyOptions;
}

/** options.egressProxy's object form. */
export interface EgressProxyOptions {
  image?: string;
  nameservers?: readonly string[];
}

/** Every option of createK8sBackend by name: any other is refused. */
export const OPTION_NAMES = optionNames<K8sBackendOptions>()(
  ...COMMON_OPTION_NAMES,
  'registrySecrets',
  'ecrLogin',
  'pullPolicy',
  'probeRegistries',
  'defaultLifetimeMs',
  'kubeconfig',
  'namespace',
  'imagePullSecrets',
  'nodeSelector',
  'gpuTypeLabel',
  'gpuTypeValues',
  'tolerations',
  'runtimeClassName',
  'serviceAccountName',
  'annotations',
  'removal',
  'patchPod',
  'execKeepAliveMs',
  'networkPolicy',
  'resolveHost',
  'refreshNamesMs',
  'builder',
  'egressProxy',
);

/** options.kubeconfig's shape, checked before any I/O: a path, a KubeConfig, or { file, context, inCluster }. */
export function checkKubeconfigOption(source: unknown): void {
  if (source === undefined || typeof source === 'string') return;
  if (source !== null && typeof source === 'object') {
    // A loaded KubeConfig (from any copy of client-node) has its own methods; a plain object is the { file, context } form.
    if (typeof (source as { loadFromFile?: unknown }).loadFromFile === 'function') return;
    checkOptionNames(source, ['file', 'context', 'inCluster'], { what: `${IDENTITY.factory}'s kubeconfig`, path: 'options.kubeconfig', backend: BACKEND });
    return;
  }
  throw new ConfigError({
    operation: 'config',
    backend: BACKEND,
    path: 'options.kubeconfig',
    message: `${IDENTITY.factory}'s kubeconfig is ${JSON.stringify(source)}: give a file's path, { file, context }, { inCluster: true } or a loaded KubeConfig`,
  });
}

/** options.egressProxy's shape, checked before any I/O: a boolean, or { image, nameservers }. */
export function checkEgressProxyOption(given: unknown): void {
  if (given === undefined || typeof given === 'boolean') return;
  const fail = (why: string) =>
    new ConfigError({
      operation: 'config',
      backend: BACKEND,
      path: 'options.egressProxy',
      message: `${IDENTITY.factory}'s egressProxy ${why}: give true, or { image?: string, nameservers?: string[] }`,
    });
  if (given === null || typeof given !== 'object' || Array.isArray(given)) throw fail(`is ${JSON.stringify(given)}`);
  checkOptionNames(given, ['image', 'nameservers'], { what: `${IDENTITY.factory}'s egressProxy`, path: 'options.egressProxy', backend: BACKEND });
  const { image, nameservers } = given as { image?: unknown; nameservers?: unknown };
  if (image !== undefined && (typeof image !== 'string' || image === '')) throw fail(`has image ${JSON.stringify(image)} (an image reference)`);
  if (nameservers !== undefined && (!Array.isArray(nameservers) || !nameservers.every((n) => typeof n === 'string' && n !== '')))
    throw fail(`has nameservers ${JSON.stringify(nameservers)} (a list of host or host:port)`);
}
