// A resumed job never mixes runs (issue 17, item 1): another agent, backend or backend target is
// refused with what changed and how to start over; a task whose files changed runs again (its old
// reward is never reused); fresh: true starts over with the old job kept aside. On the real engine.
import { readFile, readdir, rm, writeFile, cp } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunMismatchError } from '@berth/core';
import { createDockerBackend } from '@berth/backend-docker';
import { runHarborJob, type AttemptResultFile, type HarborJobReport } from '@berth/harbor';
import { tempDir, writeTask } from './support.js';

let root: string;
let tasksDir: string;
let jobDir: string;
const docker = () => createDockerBackend();
const fast = { concurrency: 2, backoff: { initialMs: 10, maxMs: 50 } };

beforeAll(async () => {
  root = await tempDir('resume');
  tasksDir = join(root, 'tasks');
  jobDir = join(root, 'jobs', 'tasks');
  await writeTask(tasksDir, 'count-lines');
  await writeTask(tasksDir, 'hello');
});
afterAll(async () => rm(root, { recursive: true, force: true }));

describe('resuming a harbor job', () => {
  it('refuses another agent, backend target or spec overrides, and keeps the first results', async () => {
    const first = await runHarborJob({ tasksDir, backend: docker(), jobDir, agent: 'none', ...fast });
    expect(first.report.score?.mean).toBe(0);

    const asOracle = await runHarborJob({ tasksDir, backend: docker(), jobDir, agent: 'oracle', ...fast }).then(
      () => new Error('it ran'),
      (e: unknown) => e as Error,
    );
    expect(RunMismatchError.isInstance(asOracle)).toBe(true);
    expect(asOracle.message).toMatch(/job directory .* holds a different run: agent \("none" there, "oracle" here\)/);
    expect(asOracle.message).toMatch(/pass fresh: true to start over/);

    const elsewhere = createDockerBackend({ host: '127.0.0.1', port: 1 });
    const moved = await runHarborJob({ tasksDir, backend: elsewhere, jobDir, agent: 'none', ...fast }).then(
      () => new Error('it ran'),
      (e: unknown) => e as Error,
    );
    expect(moved.message).toMatch(/target \("unix:\/\/\/var\/run\/docker.sock" there, "http:\/\/127.0.0.1:1" here\)/);

    const overridden = await runHarborJob({ tasksDir, backend: docker(), jobDir, agent: 'none', specOverrides: { resources: { cpus: 2 } }, ...fast }).then(
      () => new Error('it ran'),
      (e: unknown) => e as Error,
    );
    expect(overridden.message).toMatch(/specOverrides \(not set there, "sha256:[0-9a-f]{12}" here\)/);

    // The journal still holds only the first run, and resuming it as it was reuses everything.
    const report = JSON.parse(await readFile(join(jobDir, 'report.json'), 'utf8')) as HarborJobReport;
    expect(report.agent).toBe('none');
    const same = await runHarborJob({ tasksDir, backend: docker(), jobDir, agent: 'none', ...fast });
    expect(same.resume).toEqual({ reusedAttempts: 2, interruptedAttempts: 0, changedTasks: [] });
  });

  it('fresh: true starts over, the old job moved aside', async () => {
    const over = await runHarborJob({ tasksDir, backend: docker(), jobDir, agent: 'oracle', fresh: true, ...fast });
    expect(over.report.score?.mean).toBe(1);
    expect(over.resume?.reusedAttempts).toBe(0);
    const siblings = await readdir(join(root, 'jobs'));
    const aside = siblings.filter((n) => n.startsWith('tasks.replaced-'));
    expect(aside).toHaveLength(1);
    const old = JSON.parse(await readFile(join(root, 'jobs', aside[0]!, 'report.json'), 'utf8')) as HarborJobReport;
    expect(old.agent).toBe('none');
  });

  it('reruns a task whose solution was edited, and a task of the same name from another directory', async () => {
    await writeFile(join(tasksDir, 'count-lines', 'solution', 'solve.sh'), '#!/bin/sh\necho wrong > /app/done\n');
    const edited = await runHarborJob({ tasksDir, backend: docker(), jobDir, agent: 'oracle', ...fast });
    expect(edited.resume).toEqual({ reusedAttempts: 1, interruptedAttempts: 0, changedTasks: ['count-lines'] });
    expect(edited.tasks.find((t) => t.taskId === 'count-lines')?.outcome).toEqual({ reward: 0 });
    expect(edited.tasks.find((t) => t.taskId === 'hello')?.outcome).toEqual({ reward: 1 });
    // The earlier version's attempt is kept beside the new one, never deleted by it.
    const kept = (await readdir(jobDir)).filter((n) => n.startsWith('count-lines.replaced-'));
    expect(kept).toHaveLength(1);
    const before = JSON.parse(await readFile(join(jobDir, kept[0]!, 'attempt-1', 'result.json'), 'utf8')) as AttemptResultFile;
    const after = JSON.parse(await readFile(join(jobDir, 'count-lines', 'attempt-1', 'result.json'), 'utf8')) as AttemptResultFile;
    expect(before.taskVersion).toBeDefined();
    expect(after.taskVersion).not.toBe(before.taskVersion);

    // Another dataset whose hello differs (only its instruction): same id, other content.
    const other = join(root, 'other');
    await cp(tasksDir, other, { recursive: true });
    await writeFile(join(other, 'hello', 'instruction.md'), 'Say hello.\n');
    const elsewhere = await runHarborJob({ tasksDir: other, backend: docker(), jobDir, agent: 'oracle', ...fast });
    expect(elsewhere.resume?.changedTasks).toEqual(['hello']);
    const report = JSON.parse(await readFile(join(jobDir, 'report.json'), 'utf8')) as HarborJobReport;
    expect(report.tasksDir).toBe(other);
  });
});
