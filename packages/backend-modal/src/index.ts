export { createModalBackend, type ModalBackend } from './backend.js';
export type { ModalBackendOptions } from './options.js';
export type { ClientType } from './wire/index.js';
