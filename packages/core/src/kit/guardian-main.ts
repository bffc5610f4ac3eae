// The guardian process (see guardian.ts): `node guardian-main.js`, started detached by the kit with
// a pipe on stdin; runGuardian (guardian-run.ts) does the work, importing the backend's built
// guardian module named in the message.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type GuardianModule, guardianLog, runGuardian } from './guardian-run.js';

runGuardian({
  check(message) {
    if (!existsSync(fileURLToPath(message.module))) throw new Error(`no module ${message.module}`);
  },
  load: (message) => import(message.module) as Promise<GuardianModule>,
}).then(
  () => process.exit(0),
  (error: unknown) => {
    guardianLog(`stopped: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
