// Issue 3's integration test: 20 harbor tasks through runHarborJob on the real Docker engine. A
// fault hook kills the container in the first attempt of every third task (7 tasks), and one task's
// image is private with no credentials. Killed tasks must be retried and scored; the private one
// must be permanent infra, tried once, and make the run invalid; every failure's cause chain must
// be in its result.json; nothing may be left running.
import { mkdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunResult } from '@berth/core';
import { createDockerBackend } from '@berth/backend-docker';
import { runHarborJob, type AttemptResultFile, type HarborJobReport, type HarborOutcome } from '@berth/harbor';
import { taskToml, tempDir, writeTask } from './support.js';

// Its own tag: other test files remove and re-pull other tags of this repository in parallel.
const PRIVATE_IMAGE = '127.0.0.1:5000/berth/private-busybox:harbor';
const N = 20;
const PRIVATE_INDEX = 10;
const id = (i: number) => `task-${String(i).padStart(2, '0')}`;
const KILLED = new Set(
  Array.from({ length: N }, (_, i) => i)
    .filter((i) => i % 3 === 0)
    .map(id),
);

const docker = new Docker();
let root: string;
let jobDir: string;
let tasksDir: string;
let emptyDockerConfig: string;
const kills: string[] = [];
let result: RunResult<HarborOutcome>;

function backend() {
  // No credentials from anywhere: an empty Docker config, whatever this machine has.
  return createDockerBackend({ dockerConfigEnv: { DOCKER_CONFIG: emptyDockerConfig } });
}

beforeAll(async () => {
  root = await tempDir('job');
  tasksDir = join(root, 'tasks');
  jobDir = join(root, 'job');
  emptyDockerConfig = join(root, 'docker-config');
  await mkdir(emptyDockerConfig);
  for (let i = 0; i < N; i++) {
    await writeTask(tasksDir, id(i), i === PRIVATE_INDEX ? { toml: taskToml(PRIVATE_IMAGE) } : {});
  }
  // Make sure the private image is really pulled (and refused), not found in the local cache.
  await docker
    .getImage(PRIVATE_IMAGE)
    .remove({ force: true })
    .catch((error: { statusCode?: number }) => {
      if (error.statusCode !== 404) throw error;
    });
  await expect(docker.getImage(PRIVATE_IMAGE).inspect()).rejects.toMatchObject({ statusCode: 404 });

  result = await runHarborJob({
    tasksDir,
    backend: backend(),
    jobDir,
    agent: 'oracle',
    concurrency: 4,
    maxAttempts: 3,
    backoff: { initialMs: 50, maxMs: 200 },
    hooks: {
      async afterStart(env, task, ctx) {
        if (!KILLED.has(task.id) || ctx.attempt !== 1) return;
        kills.push(task.id);
        const container = docker.getContainer(env.id);
        await container.kill();
        await container.wait();
      },
    },
  });
}, 300_000);

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function resultFile(taskId: string, attempt: number): Promise<AttemptResultFile> {
  return JSON.parse(await readFile(join(jobDir, taskId, `attempt-${attempt}`, 'result.json'), 'utf8')) as AttemptResultFile;
}

describe('harbor job on Docker: killed sandboxes and a private image', () => {
  it('killed the first attempt of every third task', () => {
    expect(KILLED.size).toBe(7);
    expect(new Set(kills)).toEqual(KILLED);
    expect(kills).toHaveLength(7); // first attempts only
  });

  it('retried every killed task and scored it on attempt 2 with reward 1', () => {
    for (const taskId of KILLED) {
      const task = result.tasks.find((t) => t.taskId === taskId)!;
      expect(task.status, taskId).toBe('scored');
      expect(task.chosenAttempt, taskId).toBe(2);
      expect(task.outcome, taskId).toEqual({ reward: 1 });
      expect(task.attempts, taskId).toHaveLength(2);
      const [first, second] = task.attempts;
      expect(first?.status).toBe('failed');
      expect(first?.failure?.category, taskId).toBe('transient_infra');
      expect(['TransferError', 'SandboxLostError'], `${taskId}: ${first?.failure?.type}`).toContain(first?.failure?.type);
      expect(second).toMatchObject({ status: 'outcome', outcome: { reward: 1 } });
    }
  });

  it('the private image is permanent infra, tried exactly once', () => {
    const task = result.tasks.find((t) => t.taskId === id(PRIVATE_INDEX))!;
    expect(task.status).toBe('infra_failed');
    expect(task.attempts).toHaveLength(1);
    expect(task.chosenAttempt).toBeUndefined();
    expect(task.failure).toMatchObject({ category: 'permanent_infra', type: 'ImagePullError', retryable: false });
    expect(task.failure?.error.details).toMatchObject({ reason: 'unauthorized', image: PRIVATE_IMAGE });
  });

  it('every other task scored 1 on its first attempt', () => {
    const others = result.tasks.filter((t) => !KILLED.has(t.taskId) && t.taskId !== id(PRIVATE_INDEX));
    expect(others).toHaveLength(12);
    for (const task of others) expect(task, task.taskId).toMatchObject({ status: 'scored', chosenAttempt: 1, outcome: { reward: 1 } });
  });

  it('reports the run as invalid because of permanent infrastructure, with exact accounting', () => {
    const { report } = result;
    expect(report).toMatchObject({
      total: 20,
      scored: 19,
      taskFailures: 0,
      infraFailed: { total: 1, transient: 0, permanent: 1, unclassified: 0 },
      notRun: { total: 0 },
      attempts: 27, // 20 first attempts + 7 retries
      retries: 7,
      unclassified: 0,
      valid: false,
    });
    expect(report.coverage).toBeCloseTo(19 / 20);
    expect(report.score).toMatchObject({ field: 'reward', mean: 1, over: 19 });
    expect(report.byCategory).toMatchObject({ transient_infra: 7, permanent_infra: 1 });
    expect(report.invalidReasons.join('\n')).toMatch(/permanent infrastructure/i);
  });

  it('writes report.json with the run report and each task chosen attempt, status and failure type', async () => {
    const written = JSON.parse(await readFile(join(jobDir, 'report.json'), 'utf8')) as HarborJobReport;
    expect(written.report).toEqual(result.report);
    expect(written).toMatchObject({ agent: 'oracle', backend: 'docker', jobDir, tasksDir });
    expect(written.tasks.map((t) => t.taskId)).toEqual(Array.from({ length: N }, (_, i) => id(i)));
    expect(written.tasks.find((t) => t.taskId === id(PRIVATE_INDEX))).toMatchObject({
      status: 'infra_failed',
      failureCategory: 'permanent_infra',
      failureType: 'ImagePullError',
      resultPath: join(id(PRIVATE_INDEX), 'attempt-1', 'result.json'),
    });
    expect(written.tasks.find((t) => t.taskId === id(3))).toMatchObject({
      status: 'rewarded',
      chosenAttempt: 2,
      reward: 1,
      attempts: [
        { attempt: 1, status: 'failed', category: 'transient_infra' },
        { attempt: 2, status: 'outcome' },
      ],
    });
  });

  it("keeps every failed attempt's full cause chain in its result.json", async () => {
    const failed = result.tasks.flatMap((t) => t.attempts.filter((a) => a.status === 'failed'));
    expect(failed).toHaveLength(8);
    for (const attempt of failed) {
      const file = await resultFile(attempt.taskId, attempt.attempt);
      expect(file.outcome).toBeUndefined();
      expect(file.failure?.type).toBe(attempt.failure?.type);
      expect(file.failure?.error.cause, `${attempt.taskId}#${attempt.attempt}`).toBeDefined();
      expect(file.failure?.error.cause?.message).toBeTruthy();
      expect(file.steps.at(-1)?.name).toBe('teardown');
    }
    const privateFile = await resultFile(id(PRIVATE_INDEX), 1);
    expect(privateFile.image).toBe(PRIVATE_IMAGE);
    expect(privateFile.failure?.error.message).toMatch(/no basic auth credentials|unauthorized/i);
    // A killed attempt's chain ends at what the engine said.
    const killed = await resultFile(id(0), 1);
    expect(JSON.stringify(killed.failure?.error)).toMatch(/SandboxLostError/);
  });

  it('leaves no container behind', async () => {
    const left = await docker.listContainers({ all: true, filters: { label: [`berth.owner-pid=${process.pid}`] } });
    expect(left.map((c) => `${c.Names[0]} ${c.State}`)).toEqual([]);
  });

  it('running the same job directory again resumes it from the journal: nothing runs twice', async () => {
    const again = await runHarborJob({
      tasksDir,
      backend: backend(),
      jobDir,
      concurrency: 4,
      maxAttempts: 3,
      hooks: {
        async afterStart() {
          throw new Error('no attempt should run on resume');
        },
      },
    });
    expect(again.resume).toEqual({ reusedAttempts: 27, interruptedAttempts: 0, changedTasks: [] });
    expect({ ...again.report, durationMs: 0 }).toEqual({ ...result.report, durationMs: 0 });
  });
});
