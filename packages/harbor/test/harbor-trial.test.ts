// The trial function on its own, against the real Docker engine: one attempt per test, called the
// way runTrials calls it.
import { readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import {
  BerthError,
  TaskDefinitionError,
  SandboxLostError,
  SandboxTracker,
  TaskFailure,
  TransferError,
  classifyFailure,
  createEvents,
  type RunEvents,
  type TrialContext,
} from '@berth/core';
import { createDockerBackend } from '@berth/backend-docker';
import { LABEL_TASK, createHarborTrial, loadHarborTask, type AttemptResultFile, type HarborAgent, type HarborHooks, type HarborTask } from '@berth/harbor';
import { taskToml, tempDir, writeTask, type TaskFiles } from './support.js';

const docker = new Docker();
const backend = createDockerBackend();
const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

function ctxFor(task: HarborTask, attempt = 1, signal = new AbortController().signal): TrialContext {
  return { attempt, signal, events: createEvents<RunEvents>(), taskId: task.id, sandboxes: new SandboxTracker() };
}

async function setup(files: TaskFiles = {}, id = 'task') {
  const root = await tempDir('trial');
  dirs.push(root);
  const task = await loadHarborTask(await writeTask(join(root, 'tasks'), id, files));
  const jobDir = join(root, 'job');
  return { task, jobDir };
}

async function resultOf(jobDir: string, task: HarborTask, attempt = 1): Promise<AttemptResultFile> {
  return JSON.parse(await readFile(join(jobDir, task.id, `attempt-${attempt}`, 'result.json'), 'utf8')) as AttemptResultFile;
}

async function run(files: TaskFiles, opts: { agent?: HarborAgent; hooks?: HarborHooks; attempt?: number } = {}) {
  const { task, jobDir } = await setup(files);
  const trial = createHarborTrial({ backend, jobDir, ...(opts.agent ? { agent: opts.agent } : {}), ...(opts.hooks ? { hooks: opts.hooks } : {}) });
  const settled = await trial(task, ctxFor(task, opts.attempt ?? 1)).then(
    (outcome) => ({ outcome, error: undefined as unknown }),
    (error: unknown) => ({ outcome: undefined, error }),
  );
  const result = await resultOf(jobDir, task, opts.attempt ?? 1);
  // Whatever happened, the sandbox is gone.
  if (result.environmentId) await expect(docker.getContainer(result.environmentId).inspect()).rejects.toMatchObject({ statusCode: 404 });
  return { ...settled, result, task, jobDir, attemptDir: join(jobDir, task.id, `attempt-${opts.attempt ?? 1}`) };
}

async function taskFailureOf(files: TaskFiles, agent?: HarborAgent) {
  const r = await run(files, agent ? { agent } : {});
  expect(TaskFailure.isInstance(r.error), String(r.error)).toBe(true);
  expect(r.result.failure).toMatchObject({ category: 'task_failure', type: (r.error as TaskFailure).type });
  expect(r.result.outcome).toBeUndefined();
  return r;
}

describe('createHarborTrial on Docker', () => {
  it('oracle: solves, verifies, scores 1, and archives everything in result.json and beside it', async () => {
    // The container's labels, read from the engine while it runs.
    let labels: Record<string, string> = {};
    const r = await run(
      {},
      {
        hooks: {
          afterStart: async (env) => {
            labels = (await docker.getContainer(env.id).inspect()).Config.Labels;
          },
        },
      },
    );
    expect(r.error).toBeUndefined();
    expect(r.outcome).toEqual({ reward: 1 });
    expect(r.result).toMatchObject({
      taskId: 'task',
      attempt: 1,
      agent: 'oracle',
      backend: 'docker',
      image: 'berth-test/busybox:latest',
      outcome: { reward: 1 },
    });
    expect(r.result.failure).toBeUndefined();
    expect(r.result.steps.map((s) => s.name)).toEqual([
      'start',
      'hook afterStart', // the label read above
      'prepare',
      'upload solution',
      'agent',
      'download agent logs',
      'artifacts',
      'upload tests',
      'verifier',
      'download verifier logs',
      'teardown',
    ]);
    expect(r.result.steps.every((s) => s.ended === 'completed' && s.durationMs >= 0)).toBe(true);
    expect(r.result.steps.find((s) => s.name === 'verifier')).toMatchObject({ exitCode: 0, timedOut: false });
    expect(Date.parse(r.result.endedAt) - Date.parse(r.result.startedAt)).toBeGreaterThanOrEqual(0);
    expect(await readFile(join(r.attemptDir, 'verifier', 'test-stdout.txt'), 'utf8')).toBe('PASS\n');
    expect(await readFile(join(r.attemptDir, 'verifier', 'test-stderr.txt'), 'utf8')).toBe('');
    expect(await readFile(join(r.attemptDir, 'verifier', 'reward.txt'), 'utf8')).toBe('1\n');
    await stat(join(r.attemptDir, 'agent', 'stdout.txt'));
    // The container carried the task label.
    expect(r.result.environmentId).toMatch(/^berth-/);
    expect(labels[LABEL_TASK], `the container's labels: ${JSON.stringify(labels)}`).toBe('task');
  });

  it("agent 'none' leaves the task unsolved: reward 0, the verifier's stderr kept", async () => {
    const r = await run({}, { agent: 'none' });
    expect(r.outcome).toEqual({ reward: 0 });
    expect(r.result.steps.map((s) => s.name)).not.toContain('agent');
    expect(await readFile(join(r.attemptDir, 'verifier', 'test-stderr.txt'), 'utf8')).toMatch(/FAIL/);
  });

  it('an agent function works in the started environment', async () => {
    async function myAgent(env: import('@berth/core').Environment, task: HarborTask, ctx: TrialContext) {
      expect(ctx.signal.aborted).toBe(false);
      expect(task.id).toBe('task');
      await env.exec('mkdir -p /app && echo solved > /app/done', { signal: ctx.signal });
    }
    const r = await run({ solve: null }, { agent: myAgent });
    expect(r.outcome).toEqual({ reward: 1 });
    expect(r.result.agent).toBe('myAgent');
  });

  it("reward.json first, every field in rewards; the test runs in the image's workdir, as harbor runs it", async () => {
    const r = await run({
      test: `#!/bin/sh\n[ "$(pwd)" = / ] || exit 3\necho 0 > /logs/verifier/reward.txt\necho '{"reward": 0.5, "passed": 3, "failed": 3}' > /logs/verifier/reward.json\n`,
    });
    expect(r.error).toBeUndefined();
    expect(r.outcome).toEqual({ reward: 0.5, rewards: { reward: 0.5, passed: 3, failed: 3 } });
    // Every value must be a finite number (harbor refuses the file otherwise).
    const text = await taskFailureOf({ test: `#!/bin/sh\necho '{"reward": 1, "note": "half"}' > /logs/verifier/reward.json\n` });
    expect((text.error as TaskFailure).type).toBe('RewardFileInvalid');
    expect((text.error as Error).message).toContain('"note"');
  });

  it('no reward file is RewardFileMissing, saying how the verifier ended', async () => {
    const r = await taskFailureOf({ test: '#!/bin/sh\necho "pytest: not found" >&2\nexit 127\n' });
    expect((r.error as TaskFailure).type).toBe('RewardFileMissing');
    expect((r.error as Error).message).toMatch(/exited 127.*pytest: not found/);
    expect(r.result.steps.find((s) => s.name === 'verifier')).toMatchObject({ exitCode: 127 });
    expect(await readFile(join(r.attemptDir, 'verifier', 'test-stderr.txt'), 'utf8')).toBe('pytest: not found\n');
  });

  it('a verifier that removed /logs/verifier is RewardFileMissing too, with the transfer as cause', async () => {
    const r = await taskFailureOf({ test: '#!/bin/sh\nrm -rf /logs/verifier\n' });
    expect((r.error as TaskFailure).type).toBe('RewardFileMissing');
    expect(TransferError.isInstance((r.error as Error).cause)).toBe(true);
    expect(r.result.failure?.error.cause).toMatchObject({ type: 'TransferError', details: { reason: 'not_found' } });
  });

  it('empty and unparseable reward files are RewardFileEmpty and RewardFileInvalid', async () => {
    const empty = await taskFailureOf({ test: '#!/bin/sh\n: > /logs/verifier/reward.txt\n' });
    expect((empty.error as TaskFailure).type).toBe('RewardFileEmpty');
    const invalid = await taskFailureOf({ test: '#!/bin/sh\necho PASSED > /logs/verifier/reward.txt\n' });
    expect((invalid.error as TaskFailure).type).toBe('RewardFileInvalid');
    expect((invalid.error as Error).message).toContain('"PASSED"');
  });

  it('a verifier past its timeout is VerifierTimeout, its output still kept', async () => {
    const toml = taskToml().replace('[verifier]\ntimeout_sec = 60.0', '[verifier]\ntimeout_sec = 1');
    const r = await taskFailureOf({ toml, test: '#!/bin/sh\necho started\nsleep 30\necho 1 > /logs/verifier/reward.txt\n' });
    expect((r.error as TaskFailure).type).toBe('VerifierTimeout');
    expect(r.result.steps.find((s) => s.name === 'verifier')).toMatchObject({ timedOut: true, ended: 'timed_out' });
    expect(r.result.durationMs).toBeLessThan(15_000);
    expect(await readFile(join(r.attemptDir, 'verifier', 'test-stdout.txt'), 'utf8')).toBe('started\n');
  });

  it('an oracle past its timeout is stopped and verified, as harbor does; so is an agent function: the reward counts, the timeout is recorded', async () => {
    const toml = taskToml().replace('[agent]\ntimeout_sec = 60.0', '[agent]\ntimeout_sec = 1');
    const oracle = await run({ toml, solve: '#!/bin/sh\nsleep 30\n' });
    expect(oracle.error).toBeUndefined();
    const timedOut = { exceptionType: 'AgentTimeoutError', exceptionMessage: 'the oracle (solution/solve.sh) did not finish within 1 s' };
    expect(oracle.outcome).toMatchObject({ reward: 0, exceptionInfo: timedOut });
    expect(oracle.result).toMatchObject({ outcome: { reward: 0, exceptionInfo: timedOut }, exceptionInfo: timedOut });
    expect(oracle.result.failure).toBeUndefined();
    expect(oracle.result.steps.find((s) => s.name === 'agent')).toMatchObject({ ended: 'timed_out', timedOut: true });
    expect(oracle.result.steps.map((s) => s.name)).toContain('verifier');
    expect(oracle.result.durationMs).toBeLessThan(20_000);

    // Stops when told, and has solved the task by then.
    const stuck: HarborAgent = async (env, _task, ctx) => {
      await env.exec('mkdir -p /app && echo solved > /app/done');
      await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
    };
    const fn = await run({ toml, solve: null }, { agent: stuck });
    expect(fn.outcome).toMatchObject({
      reward: 1,
      exceptionInfo: { exceptionType: 'AgentTimeoutError', exceptionMessage: 'the agent did not finish within 1 s' },
    });
    expect(fn.result.steps.find((s) => s.name === 'agent')).toMatchObject({ ended: 'timed_out', timedOut: true });
    expect(Date.parse(fn.result.exceptionInfo!.occurredAt)).toBeLessThanOrEqual(Date.parse(fn.result.endedAt));
  });

  it('an agent function deaf to its signal is given a grace to stop, then verified; the record says it may have run on', async () => {
    const toml = taskToml().replace('[agent]\ntimeout_sec = 60.0', '[agent]\ntimeout_sec = 1');
    let release: () => void = () => undefined;
    const deaf: HarborAgent = () => new Promise<void>((resolve) => (release = resolve));
    const r = await run({ toml, solve: null }, { agent: deaf });
    release();
    expect(r.outcome).toMatchObject({ reward: 0, exceptionInfo: { exceptionType: 'AgentTimeoutError' } });
    expect(r.result.exceptionInfo?.exceptionMessage).toMatch(/did not stop within 10 s of its signal/);
    expect(r.result.steps.find((s) => s.name === 'agent')?.durationMs).toBeGreaterThanOrEqual(10_000);
  });

  it('artifacts are copied out before the verifier, as harbor does: what the agent left, never what the verifier wrote', async () => {
    // A top-level key: before the first table.
    const toml = taskToml().replace('version = "1.0"\n', 'version = "1.0"\nartifacts = ["/app/out.txt"]\n');
    const solve = '#!/bin/sh\nmkdir -p /app && echo agent > /app/out.txt && echo agent > /logs/artifacts/mine.txt && echo solved > /app/done\n';
    const test = `#!/bin/sh
echo verifier > /app/out.txt; echo verifier > /logs/artifacts/mine.txt; echo verifier > /logs/artifacts/verifier.txt
echo 1 > /logs/verifier/reward.txt
`;
    const r = await run({ toml, solve, test });
    expect(r.outcome).toEqual({ reward: 1 });
    expect(await readFile(join(r.attemptDir, 'artifacts', 'out.txt'), 'utf8')).toBe('agent\n');
    expect(await readFile(join(r.attemptDir, 'artifacts', 'mine.txt'), 'utf8')).toBe('agent\n');
    await expect(stat(join(r.attemptDir, 'artifacts', 'verifier.txt'))).rejects.toMatchObject({ code: 'ENOENT' });
    // A single file as an artifact lands as that file.
    expect(r.result.artifacts).toContainEqual({ source: '/app/out.txt', destination: join('artifacts', 'out.txt'), status: 'copied' });
    const steps = r.result.steps.map((s) => s.name);
    expect(steps.indexOf('artifacts')).toBeLessThan(steps.indexOf('upload tests'));
  });

  it("an oracle run of a task without solve.sh is the task's mistake (TaskDefinitionError) before any sandbox starts", async () => {
    const r = await run({ solve: null });
    expect(TaskDefinitionError.isInstance(r.error)).toBe(true);
    expect(r.result.environmentId).toBeUndefined();
    expect(r.result.failure).toMatchObject({ category: 'permanent_infra', type: 'TaskDefinitionError' });
  });

  it('a sandbox killed mid-attempt: berth error propagates unchanged (transient), result.json has the cause chain', async () => {
    const r = await run(
      {},
      {
        hooks: {
          async afterStart(env) {
            const container = docker.getContainer(env.id);
            await container.kill();
            await container.wait();
          },
        },
      },
    );
    // Not wrapped in anything vaguer: the error thrown is berth's own.
    expect(BerthError.isInstance(r.error)).toBe(true);
    expect(TaskFailure.isInstance(r.error)).toBe(false);
    expect(SandboxLostError.isInstance(r.error) || TransferError.isInstance(r.error)).toBe(true);
    expect(classifyFailure(r.error)).toMatchObject({ category: 'transient_infra', retryable: true });
    expect(r.result.failure).toMatchObject({ category: 'transient_infra', retryable: true });
    expect(r.result.failure?.error.cause).toBeDefined();
    expect(r.result.steps.at(-1)).toMatchObject({ name: 'teardown', ended: 'completed' });
    expect(r.result.steps.find((s) => s.ended === 'threw')?.errorType).toMatch(/SandboxLostError|TransferError/);
  });

  it('a cancelled attempt is cancelled, and still tears its sandbox down', async () => {
    const { task, jobDir } = await setup({ solve: '#!/bin/sh\nsleep 30\n' });
    const controller = new AbortController();
    const trial = createHarborTrial({
      backend,
      jobDir,
      hooks: {
        async afterStart() {
          setTimeout(() => controller.abort(new Error('stop')), 300);
        },
      },
    });
    const error = await trial(task, ctxFor(task, 1, controller.signal)).catch((e: unknown) => e);
    expect(classifyFailure(error).category).toBe('cancelled');
    const result = await resultOf(jobDir, task);
    expect(result.failure?.category).toBe('cancelled');
    await expect(docker.getContainer(result.environmentId!).inspect()).rejects.toMatchObject({ statusCode: 404 });
  });

  it('writes each attempt to its own directory, and starts a re-used attempt directory clean', async () => {
    const { task, jobDir } = await setup();
    const trial = createHarborTrial({ backend, jobDir });
    await trial(task, ctxFor(task, 2));
    const stale = join(jobDir, task.id, 'attempt-2', 'verifier', 'stale.txt');
    await import('node:fs/promises').then((fs) => fs.writeFile(stale, 'old'));
    await trial(task, ctxFor(task, 2));
    await expect(stat(stale)).rejects.toMatchObject({ code: 'ENOENT' });
    expect((await resultOf(jobDir, task, 2)).attempt).toBe(2);
  });

  it('leaves no container behind', async () => {
    const left = await docker.listContainers({ all: true, filters: { label: [`berth.owner-pid=${process.pid}`] } });
    expect(left).toEqual([]);
  });
});
