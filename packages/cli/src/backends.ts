import type { Backend, MirrorRule } from '@berth/core';
import { UsageError } from './usage-error.js';

/** The backends the CLI knows, by the name given to --backend: the package and its factory. */
const BACKENDS = {
  docker: { pkg: '@berth/backend-docker', factory: 'createDockerBackend' },
  k8s: { pkg: '@berth/backend-k8s', factory: 'createK8sBackend' },
  modal: { pkg: '@berth/backend-modal', factory: 'createModalBackend' },
} as const;

export type BackendName = keyof typeof BACKENDS;
export const BACKEND_NAMES = Object.keys(BACKENDS) as BackendName[];

export interface BackendChoice {
  name: string;
  mirrors?: readonly MirrorRule[];
}

type Factory = (options: { mirrors?: readonly MirrorRule[] }) => Backend;

function isMissing(error: unknown, pkg: string): boolean {
  const e = error as NodeJS.ErrnoException;
  return (e?.code === 'ERR_MODULE_NOT_FOUND' || e?.code === 'MODULE_NOT_FOUND') && String(e.message).includes(pkg);
}

/**
 * The backend named on the command line, loaded by package name: only Docker comes with the CLI;
 * k8s and modal are separate packages, and a missing one is a usage error that says how to add it.
 * Each backend reads its own configuration from the environment (DOCKER_HOST, KUBECONFIG, Modal's
 * token variables or ~/.modal.toml), as its package documents.
 */
export async function loadBackend({ name, mirrors }: BackendChoice): Promise<Backend> {
  if (!(name in BACKENDS)) throw new UsageError(`unknown backend "${name}": choose one of ${BACKEND_NAMES.join(', ')}`);
  const { pkg, factory } = BACKENDS[name as BackendName];
  let module: Record<string, unknown>;
  try {
    module = (await import(pkg)) as Record<string, unknown>;
  } catch (error) {
    if (isMissing(error, pkg)) {
      throw new UsageError(`the ${name} backend is not installed: run \`npm install ${pkg}\` beside @berth/cli, then try again`);
    }
    throw error;
  }
  const create = module[factory] as Factory | undefined;
  if (typeof create !== 'function') throw new UsageError(`${pkg} does not export ${factory}: is it a berth backend package of the same version as @berth/cli?`);
  return create(mirrors && mirrors.length > 0 ? { mirrors } : {});
}
