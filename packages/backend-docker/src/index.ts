export { createDockerBackend, type DockerBackend } from './backend.js';
export type { DockerBackendOptions } from './options.js';
export type { DockerAuthConfig } from './pull.js';
export { createRegistryImageBuilder, RegistryImageBuilder, type RegistryImageBuilderOptions } from './registry-builder.js';
