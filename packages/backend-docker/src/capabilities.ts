import type { Capabilities } from '@berth/core';
import { ALLOWLIST_ENFORCEMENT } from './egress-rules.js';

// What this backend claims, what it says where it does not (CapabilityErrors and the README's
// generated table), and the option names it renamed.

export const CAPABILITIES: Capabilities = {
  // Device requests (Driver nvidia), where the engine reports an NVIDIA runtime: checked at start.
  gpus: true,
  // Docker's device requests take a count or device ids, never a GPU model.
  gpuTypes: false,
  networkModes: ['public', 'none'],
  imageAuth: ['basic', 'identityToken', 'secretName', 'dockerConfig', 'aws'],
  // Image mounts: a berth-labelled volume filled from the image by a helper container, read-only
  // (the engine's API 1.41 has no image mount type).
  // Volumes: a berth-labelled engine volume per name, mounted in the sandbox and its services.
  mounts: ['image', 'bind', 'volume'],
  imageBuild: true,
  execUser: true,
  // Exec's Tty, sized by a resize right after the start (API 1.41 has no ConsoleSize on create).
  tty: true,
  networkSwitch: true,
  // A packet filter in each such sandbox's namespace, written by a helper image berth makes on first use (egress-image.ts).
  networkAllowlist: ALLOWLIST_ENFORCEMENT,
  // docker commit, paused; a local image swept like the containers.
  snapshot: true,
  services: true,
  resourceLimits: { cpus: true, memory: true, storage: false },
};

export const HINTS = {
  'network.allowlist.wildcards':
    "packet filters see addresses, and berth resolves names to addresses for them: a wildcard names no address; list each hostname, or set options.egressProxy (names and wildcards matched by name at berth's egress proxy, with the engine on this machine)",
  gpus: "install the NVIDIA Container Toolkit on the engine's host and register its runtime (nvidia-ctk runtime configure --runtime=docker, then restart dockerd), or set resources.gpus to 0",
  gpuTypes:
    "Docker's device requests take GPUs by count, not by model: leave resources.gpuTypes out to take any of the engine's GPUs, or run on Kubernetes or Modal",
  'resources.storage': 'leave it unset for Docker (limits need xfs quotas)',
  imageAuth: 'aws needs options.ecrLogin',
};

export const RENAMED = {
  env: "dockerConfigEnv: it is where Docker config credentials are looked up, not the sandboxes' environment (that is spec.env)",
};
