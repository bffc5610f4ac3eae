// Which generation of Modal's sandbox RPCs a sandbox is made with (src/wire/sandbox-rpcs.ts).
// V2 is what Modal's Python SDK 1.6.4 uses by default; V1 stays where the SDK itself stays on V1
// and as a switch back, should Modal's V2 refuse something berth needs.
import { ConfigError, type EnvironmentSpec } from '@berth/core';
import { BACKEND, IDENTITY } from './identity.js';
import type { ModalBackendOptions } from './options.js';
import type { SandboxApiVersion } from './wire/index.js';

/** options.sandboxApi as a version, checked before any I/O (ConfigError naming the option). */
export function sandboxApiOption(options: Pick<ModalBackendOptions, 'sandboxApi'>): SandboxApiVersion {
  const value: unknown = options.sandboxApi ?? 'v2';
  if (value === 'v2') return 2;
  if (value === 'v1') return 1;
  throw new ConfigError({
    operation: 'config',
    backend: BACKEND,
    path: 'options.sandboxApi',
    message: `${IDENTITY.factory}'s sandboxApi is 'v2' (the default, as Modal's SDK) or 'v1'; got ${JSON.stringify(value)}`,
  });
}

/**
 * The generation one sandbox is made with. A GPU sandbox goes on V1 because Modal's SDK sends one
 * there (sandbox/_sandbox.py:72-80: V1 when gpu, network_file_systems or pty_info is given): that
 * V2 serves GPUs is not known. berth sets neither network file systems nor the sandbox's own
 * pty_info (a terminal exec's pty goes to the router's TaskExecStart, which is the same for both).
 */
export function sandboxApiFor(option: SandboxApiVersion, spec: EnvironmentSpec): SandboxApiVersion {
  return option === 1 || (spec.resources.gpus ?? 0) > 0 ? 1 : 2;
}
