import type { Capabilities } from '@berth/core';

// What this backend claims, what it says where it does not (CapabilityErrors and the README's
// generated table), and the option names it renamed.

export const CAPABILITIES: Capabilities = {
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

export const HINTS = {
  gpus: "the engine's GPU runtime is not set up by berth: set resources.gpus to 0, or use a backend that provides GPUs",
  'resources.storage': 'leave it unset for Docker (limits need xfs quotas)',
  'mounts.image': 'use a bind mount of an extracted copy',
  imageAuth: 'aws needs options.ecrLogin',
};

export const RENAMED = {
  env: "dockerConfigEnv: it is where Docker config credentials are looked up, not the sandboxes' environment (that is spec.env)",
};
