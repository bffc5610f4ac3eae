// snapshotSetup on the real Docker engine: each task set up once (a command run as root in a
// sandbox of its environment), snapshotted, and every trial started from that snapshot; a setup
// command that fails is the run's ConfigError, not a zero; a backend that cannot snapshot is refused
// before anything starts; the snapshots are gone when the job ends.
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, type Backend } from '@berth/core';
import { createDockerBackend } from '@berth/backend-docker';
import { runHarborJob, type AttemptResultFile, type HarborJobReport } from '@berth/harbor';
import { tempDir, writeTask } from './support.js';

const docker = new Docker();
let root: string;
beforeAll(async () => {
  root = await tempDir('snapshot-setup');
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

// The verifier scores 1 only where the setup's marker is: a trial that did not start from the snapshot scores 0.
const NEEDS_SETUP = `#!/bin/sh
mkdir -p /logs/verifier
if [ "$(cat /opt/setup/marker 2>/dev/null)" = installed ] && [ "$(cat /app/done 2>/dev/null)" = solved ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
`;

/** The Docker backend as one that does not claim snapshots. */
function cannotSnapshot(): Backend {
  const docker = createDockerBackend();
  return { ...docker, capabilities: { ...docker.capabilities, snapshot: false } };
}

describe('runHarborJob snapshotSetup (docker)', () => {
  it('sets each task up once, starts every trial from its snapshot, says so in result.json and report.json, and removes the snapshots at the end', async () => {
    const tasksDir = join(root, 'tasks');
    await writeTask(tasksDir, 'needs-setup-a', { test: NEEDS_SETUP });
    await writeTask(tasksDir, 'needs-setup-b', { test: NEEDS_SETUP });
    const jobDir = join(root, 'job');
    const result = await runHarborJob({
      tasksDir,
      backend: createDockerBackend(),
      jobDir,
      snapshotSetup: { command: 'mkdir -p /opt/setup && printf installed > /opt/setup/marker' },
      concurrency: 2,
    });
    expect(result.tasks.map((t) => [t.taskId, t.outcome?.reward])).toEqual([
      ['needs-setup-a', 1],
      ['needs-setup-b', 1],
    ]);
    const refs: string[] = [];
    for (const task of ['needs-setup-a', 'needs-setup-b']) {
      const attempt = JSON.parse(await readFile(join(jobDir, task, 'attempt-1', 'result.json'), 'utf8')) as AttemptResultFile;
      expect(attempt.snapshot?.ref).toMatch(/^berth-snapshot\.invalid\/docker\//);
      expect(attempt.steps.map((s) => s.name)).toContain('snapshot setup');
      refs.push(attempt.snapshot!.ref);
    }
    expect(new Set(refs).size, 'one snapshot per task').toBe(2);
    const report = JSON.parse(await readFile(join(jobDir, 'report.json'), 'utf8')) as HarborJobReport;
    expect(report.tasks.map((t) => t.attempts[0]?.snapshot)).toEqual(refs);
    for (const ref of refs) await expect(docker.getImage(ref).inspect()).rejects.toMatchObject({ statusCode: 404 });
  }, 120_000);

  it('a setup command that fails is infra_failed with a ConfigError naming snapshotSetup.command and its output, never a zero', async () => {
    const tasksDir = join(root, 'failing');
    await writeTask(tasksDir, 'setup-fails', { test: NEEDS_SETUP });
    const jobDir = join(root, 'failing-job');
    const result = await runHarborJob({ tasksDir, backend: createDockerBackend(), jobDir, snapshotSetup: { command: 'echo no such installer >&2; exit 7' } });
    const [task] = result.tasks;
    expect(task?.status).toBe('infra_failed');
    expect(task?.failure).toMatchObject({ category: 'permanent_infra', type: 'ConfigError' });
    expect(task?.failure?.message).toMatch(/snapshot setup of task setup-fails exited 7: no such installer/);
    expect(task?.attempts).toHaveLength(1);
  }, 120_000);

  it('a backend that cannot snapshot is refused before any task runs', async () => {
    const tasksDir = join(root, 'refused');
    await writeTask(tasksDir, 'any');
    const error = await runHarborJob({ tasksDir, backend: cannotSnapshot(), jobDir: join(root, 'refused-job'), snapshotSetup: { command: 'true' } }).catch(
      (e: unknown) => e,
    );
    expect(ConfigError.isInstance(error), String(error)).toBe(true);
    expect((error as ConfigError).path).toBe('snapshotSetup');
    expect(String(error)).toMatch(/cannot snapshot a sandbox/);
  });
});
