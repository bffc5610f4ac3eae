// Mistakes in a task's own files, run for real on Docker: each one is a TaskDefinitionError (never a
// task failure scored 0, never retried), the run is invalid and names the tasks, the good task
// beside them is scored, and preflight's checkTask finds the ones loading can see.
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunResult } from '@berth/core';
import { createDockerBackend } from '@berth/backend-docker';
import { checkTask, loadHarborTasks, runHarborJob, type AttemptResultFile, type HarborOutcome } from '@berth/harbor';
import { SOLVE_SH, TEST_SH, tempDir, writeTask } from './support.js';

let root: string;
let result: RunResult<HarborOutcome>;
const MISTAKES: Record<string, { path: string; said: RegExp; sandbox: boolean }> = {
  'crlf-test': { path: 'tests/test.sh', said: /CRLF/, sandbox: false },
  'no-test': { path: 'tests/test.sh', said: /there is no tests\/test\.sh/, sandbox: false },
  'no-solution': { path: 'solution/solve.sh', said: /no solution\/solve\.sh/, sandbox: false },
  'named-fields': { path: 'tests/test.sh', said: /the fields accuracy, passed and no "reward"/, sandbox: true },
  'bad-interpreter': { path: 'tests/test.sh', said: /#!\/usr\/bin\/no-such-shell/, sandbox: true },
};

beforeAll(async () => {
  root = await tempDir('definition');
  const tasks = join(root, 'tasks');
  await writeTask(tasks, 'good');
  await writeTask(tasks, 'crlf-test', { test: TEST_SH.replaceAll('\n', '\r\n') });
  await writeTask(tasks, 'no-test', { test: null });
  await writeTask(tasks, 'no-solution', { solve: null });
  // What `berth init`'s old template invited: named fields, no "reward".
  await writeTask(tasks, 'named-fields', { test: '#!/bin/sh\necho \'{"accuracy": 0.75, "passed": 3}\' > /logs/verifier/reward.json\n' });
  await writeTask(tasks, 'bad-interpreter', { test: '#!/usr/bin/no-such-shell\necho 1 > /logs/verifier/reward.txt\n', solve: SOLVE_SH });
  result = await runHarborJob({
    tasksDir: tasks,
    backend: createDockerBackend(),
    jobDir: join(root, 'job'),
    agent: 'oracle',
    concurrency: 3,
    maxAttempts: 3,
    backoff: { initialMs: 10, maxMs: 20 },
  });
}, 180_000);

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("a task's own mistakes", () => {
  it('are TaskDefinitionErrors, tried once, never scored; the good task is scored', () => {
    const byId = new Map(result.tasks.map((t) => [t.taskId, t]));
    expect(byId.get('good')).toMatchObject({ status: 'scored', outcome: { reward: 1 } });
    for (const [id, { said }] of Object.entries(MISTAKES)) {
      const task = byId.get(id)!;
      expect(task.status, id).toBe('infra_failed');
      expect(task.failure, id).toMatchObject({ category: 'permanent_infra', type: 'TaskDefinitionError' });
      expect(task.failure?.message, id).toMatch(said);
      expect(task.attempts, id).toHaveLength(1);
    }
    expect(result.report.taskFailures).toBe(0);
    expect(result.report.score).toMatchObject({ mean: 1, over: 1 });
  });

  it('make the run invalid, naming every one of those tasks and nothing about the infrastructure', () => {
    expect(result.report.valid).toBe(false);
    const reason = result.report.invalidReasons.find((r) => r.includes('defined wrongly'));
    expect(reason).toBeDefined();
    for (const id of Object.keys(MISTAKES)) expect(reason).toContain(id);
    expect(result.report.invalidReasons.join('\n')).not.toMatch(/permanent infrastructure/);
  });

  it('are seen before any sandbox where the files tell, after the run only where they cannot (result.json says which file)', async () => {
    for (const [id, { path, sandbox }] of Object.entries(MISTAKES)) {
      const record = JSON.parse(await readFile(join(root, 'job', id, 'attempt-1', 'result.json'), 'utf8')) as AttemptResultFile;
      expect(record.failure, id).toMatchObject({ type: 'TaskDefinitionError', error: { details: { path } } });
      expect(record.environmentId !== undefined, `${id}: a sandbox started`).toBe(sandbox);
    }
  });

  it("preflight's checkTask finds those the files show, for the agent concerned", async () => {
    const tasks = await loadHarborTasks(join(root, 'tasks'));
    const fails = async (agent: 'oracle' | 'none') =>
      Object.fromEntries(await Promise.all(tasks.map(async (t) => [t.id, (await checkTask(t, agent)).map((c) => c.name)] as const)));
    expect(await fails('oracle')).toEqual({
      'bad-interpreter': [],
      'crlf-test': ['tests/test.sh'],
      good: [],
      'named-fields': [],
      'no-solution': ['solution/solve.sh'],
      'no-test': ['tests/test.sh'],
    });
    // Another agent never runs solve.sh.
    expect((await fails('none'))['no-solution']).toEqual([]);
  });
});
