import type { KubeConfig, V1Pod, V1Toleration } from '@kubernetes/client-node';
import type { EnvironmentSpec, ImageBuilder, MirrorRule } from '@berth/core';
import type { CreationLimits, PullCredentialSources } from '@berth/core/backend-kit';

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

export interface K8sBackendOptions extends PullCredentialSources {
  kubeconfig?: KubeconfigSource;
  /** Every call is namespaced here. Default: the context's namespace, else 'default'. */
  namespace?: string;
  /** The pods' imagePullPolicy: 'if-missing' (default, IfNotPresent, also for :latest), 'always', 'never'. */
  pullPolicy?: 'if-missing' | 'always' | 'never';
  /** Existing pull secrets of the namespace, added to every pod. */
  imagePullSecrets?: readonly string[];
  nodeSelector?: Record<string, string>;
  tolerations?: readonly V1Toleration[];
  runtimeClassName?: string;
  /** Default: no service account token in the pod (automountServiceAccountToken: false). */
  serviceAccountName?: string;
  /** Labels and annotations on every pod (berth's own labels always win). */
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** Rewrite image references before they go into the pod, e.g. docker.io/ -> mirror:5000/. */
  mirrors?: readonly MirrorRule[];
  /** Bound pod creation per backend instance. Default: 16 at once, 20 per second. */
  creation?: CreationLimits;
  /** Bound pod deletions per backend instance, apart from creations. Default: 16 at once, 50 per second. */
  removal?: CreationLimits;
  /** Last word on the pod before it is created, for anything the options do not cover. */
  patchPod?: (pod: V1Pod, spec: EnvironmentSpec) => V1Pod;
  /**
   * Registries preflight may ask directly whether an image is pullable (no node is asked to pull).
   * Default: every registry. An image elsewhere is reported as not checked.
   */
  preflightRegistries?: readonly string[];
  /**
   * A WebSocket ping on every exec connection this often, so a command that prints nothing for a
   * long time is not cut by an idle timeout between berth and the API server (load balancers often
   * cut after 60–350 s). Default 30 s.
   */
  execKeepAliveMs?: number;
  /**
   * Builds `image: { build }` specs somewhere the cluster can pull from (a cluster cannot build from
   * a local directory), e.g. `createRegistryImageBuilder` from @berth/backend-docker. Without it,
   * a build spec is a CapabilityError.
   */
  builder?: ImageBuilder;
  /** Prefix of pod names. Default 'berth'. */
  namePrefix?: string;
}
