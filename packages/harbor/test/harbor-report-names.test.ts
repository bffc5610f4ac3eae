// report.json and result.json say what happened in words: a task whose verifier wrote no reward
// is 'task_failed' (counted as 0), not 'scored'; a verifier past its timeout 'timed_out', not ok.
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createDockerBackend } from '@berth/backend-docker';
import { runHarborJob, type AttemptResultFile, type HarborJobReport } from '@berth/harbor';
import { taskToml, tempDir, writeTask } from './support.js';

const dirs: string[] = [];
afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

describe('harbor report names', () => {
  it("says 'rewarded', 'task_failed' and 'timed_out' where those happened", async () => {
    const root = await tempDir('names');
    dirs.push(root);
    const tasksDir = join(root, 'tasks');
    const jobDir = join(root, 'job');
    await writeTask(tasksDir, 'rewarded');
    await writeTask(tasksDir, 'no-reward', { test: '#!/bin/sh\nmkdir -p /logs/verifier\necho "forgot the reward"\n' });
    await writeTask(tasksDir, 'slow-verifier', {
      toml: taskToml(undefined, '').replace('[verifier]\ntimeout_sec = 60.0', '[verifier]\ntimeout_sec = 1.0'),
      test: '#!/bin/sh\nsleep 30\n',
    });
    await runHarborJob({ tasksDir, backend: createDockerBackend(), jobDir, agent: 'oracle', concurrency: 3, maxAttempts: 1 });
    const report = JSON.parse(await readFile(join(jobDir, 'report.json'), 'utf8')) as HarborJobReport;
    const status = Object.fromEntries(report.tasks.map((t) => [t.taskId, t.status]));
    expect(status).toEqual({ 'no-reward': 'task_failed', rewarded: 'rewarded', 'slow-verifier': 'task_failed' });
    const slow = JSON.parse(await readFile(join(jobDir, 'slow-verifier', 'attempt-1', 'result.json'), 'utf8')) as AttemptResultFile;
    expect(slow.steps.find((s) => s.name === 'verifier')).toMatchObject({ ended: 'timed_out', timedOut: true });
    const rewarded = JSON.parse(await readFile(join(jobDir, 'rewarded', 'attempt-1', 'result.json'), 'utf8')) as AttemptResultFile;
    expect(rewarded.steps.every((s) => s.ended === 'completed')).toBe(true);
  }, 120_000);
});
