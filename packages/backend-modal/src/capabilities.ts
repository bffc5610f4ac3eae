import type { Capabilities } from '@berth/core';
import { ALLOWLIST_ENFORCEMENT } from './network-access.js';

// What this backend claims, what it says where it does not (CapabilityErrors and the README's
// generated table), and the option names it renamed.

export const CAPABILITIES: Capabilities = {
  // Resources.gpu_config: a count without a type is Modal's "any" (gpu="any" in Modal's own client).
  gpus: true,
  // A sandbox takes one GPU type (Modal's fallback lists are for Functions only): the first of the list.
  gpuTypes: true,
  networkModes: ['public', 'none'],
  // TaskSetNetworkAccess on the task's router, on a sandbox made with an allowlist policy (network-access.ts).
  networkSwitch: true,
  // An ALLOWLIST policy: CIDRs for addresses, TLS server names for hostnames (network-access.ts).
  networkAllowlist: ALLOWLIST_ENFORCEMENT,
  imageAuth: ['basic', 'secretName', 'dockerConfig', 'aws'],
  mounts: [],
  // Through Modal's builder; COPY/ADD (the context upload) and multi-stage builds are refused at start.
  imageBuild: true,
  // Modal's exec has no user: the kit's launcher switches users inside the sandbox.
  execUser: true,
  // The exec request's pty_info (sized at the start; Modal has no resize for an exec).
  tty: true,
  // The router's TaskSnapshotFilesystem (as Modal's SDK snapshots); ImageDelete removes one.
  snapshot: true,
  // Each service its own sandbox in the app, over i6pn (services.ts).
  services: true,
  resourceLimits: { cpus: true, memory: true, storage: true },
};

export const HINTS = {
  'mounts.volume':
    "Modal's volumes are not shared live between sandboxes (another sandbox sees a change only after a commit and a reload), and each service is a sandbox of its own here: share files through a service's own API, or run the task on Docker or Kubernetes",
  'mounts.bind': 'upload the files after start (env.uploadDir)',
  'mounts.image':
    "Modal mounts a whole built image into a running sandbox (Sandbox.mount_image), with no subpath and nothing in its API making it read-only, while berth's image mounts are read-only: bake the runtime into the task image instead (image.build: a Dockerfile FROM the task image that COPYs it in)",
  'network.allowlist.dns':
    "Modal's allowlist leaves DNS open, as Modal documents it: any name resolves, and only connections are matched (by address, or by TLS server name); filter DNS on Docker or Kubernetes",
  imageAuth: "Modal's registry secrets hold a username and password, or AWS keys",
};

/** Modal's documented creation rate. */
export const DEFAULT_CREATION = { perSecond: 5, maxConcurrent: 32 };

export const RENAMED = { env: 'modalConfigEnv (where MODAL_TOKEN_ID and the other Modal variables are read)' };
