export { createK8sBackend, type K8sBackend } from './backend.js';
export type { EgressProxyOptions, K8sBackendOptions, KubeconfigSource } from './options.js';
export type { K8sTarget } from './cluster.js';
