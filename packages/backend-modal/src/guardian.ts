// The module the guardian process imports (see the guardian in @berth/core's README): the backend
// rebuilt from the credentials this process resolved (sent over the guardian's pipe), so its sweep
// terminates a dead process's sandboxes.
import { createModalBackend, type ModalBackend } from './backend.js';
import type { ModalGuardianConfig } from './options.js';

export function guardianBackend(config: ModalGuardianConfig): ModalBackend {
  // Only these: no ~/.modal.toml or MODAL_* lookup may change where the guardian goes.
  return createModalBackend({ ...config, modalConfigEnv: {}, guardian: false });
}
