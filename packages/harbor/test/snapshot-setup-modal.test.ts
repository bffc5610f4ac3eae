// snapshotSetup on Modal (the simulator): each task set up once in a Modal sandbox, snapshotted with
// the router's TaskSnapshotFilesystem, its trials started from that image, and the snapshot deleted
// (ImageDelete) when the job ends.
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createModalBackend } from '@berth/backend-modal';
import { runHarborJob, type AttemptResultFile } from '@berth/harbor';
import { ModalSimulator } from '@berth/test-support/modal-sim';
import { tempDir, writeTask } from './support.js';

const sim = await ModalSimulator.start();
const backend = createModalBackend({ serverUrl: sim.url, ca: sim.ca, tokenId: sim.tokenId, tokenSecret: sim.tokenSecret, modalConfigEnv: {} });
const dirs: string[] = [];
afterAll(async () => {
  await backend.close();
  await sim.close();
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

const NEEDS_SETUP = `#!/bin/sh
mkdir -p /logs/verifier
if [ "$(cat /opt/setup/marker 2>/dev/null)" = installed ] && [ "$(cat /app/done 2>/dev/null)" = solved ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
`;

describe('runHarborJob snapshotSetup on Modal (simulated)', () => {
  it('sets the task up once, starts its trial from the snapshot, and deletes the snapshot at the end', async () => {
    const base = await tempDir('modal-snapshot');
    dirs.push(base);
    const tasksDir = join(base, 'tasks');
    await writeTask(tasksDir, 'modal-setup', { test: NEEDS_SETUP });
    const jobDir = join(base, 'job');
    const result = await runHarborJob({ tasksDir, backend, jobDir, snapshotSetup: { command: 'mkdir -p /opt/setup && printf installed > /opt/setup/marker' } });
    expect(result.tasks.map((t) => [t.taskId, t.outcome?.reward])).toEqual([['modal-setup', 1]]);
    const attempt = JSON.parse(await readFile(join(jobDir, 'modal-setup', 'attempt-1', 'result.json'), 'utf8')) as AttemptResultFile;
    expect(attempt.snapshot?.ref).toMatch(/^berth-snapshot\.invalid\/modal:im-/);
    const paths = sim.calls.map((c) => c.path);
    expect(paths.filter((p) => p.endsWith('/TaskSnapshotFilesystem'))).toHaveLength(1);
    expect(paths.filter((p) => p.endsWith('/ImageDelete'))).toHaveLength(1);
  }, 120_000);
});
