// The module the guardian process imports (see the guardian in @berth/core's README): the backend
// rebuilt from what reaches the engine, so its sweep removes a dead process's containers and volumes.
import { createDockerBackend, type DockerBackend } from './backend.js';
import type { DockerBackendOptions } from './options.js';

/** Where the engine is: the options that reach it (DOCKER_HOST and the like come with the environment). */
export type DockerGuardianConfig = Pick<DockerBackendOptions, 'socketPath' | 'host' | 'port' | 'protocol'>;

export function guardianBackend(config: DockerGuardianConfig): DockerBackend {
  return createDockerBackend({ ...config, guardian: false });
}
