export { createModalBackend, type ModalBackend } from './backend.js';
export type { ModalBackendOptions } from './options.js';
