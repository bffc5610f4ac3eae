import type { Capabilities } from '@berth/core';

// What this backend claims, what it says where it does not (CapabilityErrors and the README's
// generated table), and the option names it renamed.

export const CAPABILITIES: Capabilities = {
  gpus: true,
  // Node affinity on options.gpuTypeLabel (default nvidia.com/gpu.product), any of the types.
  gpuTypes: true,
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

export const HINTS = {
  network: "run the task with network 'public', or enforce NetworkPolicy in the cluster (see @berth/backend-k8s's README)",
  networkSwitch: 'a pod keeps its network: run the whole task with one network',
  execUser: "the exec subresource has no user: every command runs as the container's user",
  tty: 'the exec socket speaks only the stdin, stdout, stderr and error channels: use berth exec without a terminal, or the Docker backend',
  imageBuild:
    'pass options.builder (createRegistryImageBuilder from @berth/backend-docker builds with the local engine and pushes to a registry the cluster pulls from), or build and push the image and pass its reference',
};

export const RENAMED = { preflightRegistries: 'probeRegistries (the same option on every backend)' };
