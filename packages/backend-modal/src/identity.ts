import type { BackendIdentity } from '@berth/core/backend-kit';

export const BACKEND = 'modal';
/** This backend as errors name it, and the factory their advice says to configure. */
export const IDENTITY: BackendIdentity = { backend: BACKEND, factory: 'createModalBackend' };
