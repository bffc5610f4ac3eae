import { remedied, type Capabilities, type CapabilityHints } from '@berth/core';
import type { K8sBackendOptions } from './options.js';
import { ALLOWLIST_ENFORCEMENT, PROXY_ENFORCEMENT } from './egress-policy.js';

// What this backend claims, what it says where it does not (CapabilityErrors and the README's
// generated table), and the option names it renamed.

export const CAPABILITIES: Capabilities = {
  gpus: true,
  // Node affinity on options.gpuTypeLabel (default nvidia.com/gpu.product), any of the types.
  gpuTypes: true,
  // 'none' and switching: a deny-all NetworkPolicy on the pod's label, checked from inside; a
  // cluster that does not enforce it is found out before any command runs (see the README).
  networkModes: ['public', 'none'],
  networkSwitch: true,
  // Its own NetworkPolicy per pod: IP blocks, names resolved by berth (egress-policy.ts).
  networkAllowlist: ALLOWLIST_ENFORCEMENT,
  imageAuth: ['basic', 'identityToken', 'secretName', 'dockerConfig', 'aws'],
  // Volumes: an emptyDir of the pod per name, mounted in the sandbox's container and its services'.
  mounts: ['image', 'bind', 'volume'],
  imageBuild: false,
  // The exec subresource has no user: the kit's launcher switches users inside the pod.
  execUser: true,
  // The exec subresource's tty=true, sized on its resize channel (4).
  tty: true,
  // A pod's filesystem cannot be saved as an image through the API server: that needs the node's runtime.
  snapshot: false,
  services: true,
  resourceLimits: { cpus: true, memory: true, storage: true },
};

export const HINTS = {
  snapshot: remedied(
    'image-build-with-builder',
    '(image.build, with options.builder)',
    (fix) =>
      `Kubernetes' API cannot save a pod's filesystem as an image (that takes the node's container runtime): build the set-up environment into the task's image instead ${fix}, or snapshot on Docker or Modal`,
  ),
  network:
    "options.networkPolicy.enforced is false: run the task with network 'public', or enforce NetworkPolicy in the cluster and drop that option (see @berth/backend-k8s's README)",
  networkSwitch: "options.networkPolicy.enforced is false: run the whole task with network 'public'",
  'network.allowlist':
    "options.networkPolicy.enforced is false: run the task with network 'public', or enforce NetworkPolicy in the cluster and drop that option",
  'network.allowlist.wildcards':
    "NetworkPolicy allows IP blocks only, and berth resolves names to addresses for it: a wildcard names no address; list each hostname, or set options.egressProxy (names and wildcards matched by name at berth's egress proxy pod)",
  'network.allowlist.connections':
    'the enforcer (kube-router, like most iptables-based ones) accepts established flows before the policy: connections opened before a switch run on',
  imageBuild: remedied(
    'builder',
    'pass options.builder (createRegistryImageBuilder from @berth/backend-docker builds with the local engine and pushes to a registry the cluster pulls from), or build and push the image and pass its reference',
  ),
} satisfies CapabilityHints;

/** With options.networkPolicy.enforced false (a cluster said not to enforce NetworkPolicy), only 'public'. */
export function networkCapabilities(options: K8sBackendOptions): Pick<Capabilities, 'networkModes' | 'networkSwitch' | 'networkAllowlist'> {
  return options.networkPolicy?.enforced === false
    ? { networkModes: ['public'], networkSwitch: false, networkAllowlist: false }
    : {
        networkModes: CAPABILITIES.networkModes,
        networkSwitch: CAPABILITIES.networkSwitch,
        // Names by name at berth's egress proxy pod (egress-proxy-pod.ts).
        networkAllowlist: options.egressProxy ? PROXY_ENFORCEMENT : CAPABILITIES.networkAllowlist,
      };
}

export const RENAMED = { preflightRegistries: 'probeRegistries (the same option on every backend)' };
