export { createDockerBackend, DockerBackend } from './backend.js';
export { DockerEnvironment } from './environment.js';
export type { DockerBackendOptions } from './options.js';
export type { DockerAuthConfig, RegistryAuthSources } from './pull.js';
