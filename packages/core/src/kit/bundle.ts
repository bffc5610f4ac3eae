/**
 * @berth/core/bundle: for whoever bundles berth into one file (harbor's plugin ships such a
 * bundle): the guardian started from the bundle itself, and its work run there. Not for backends
 * or runners.
 */
export { type GuardianLauncher, type GuardianMessage, type GuardianTarget, useGuardianLauncher } from './guardian.js';
export { type GuardedBackend, type GuardianModule, runGuardian } from './guardian-run.js';
