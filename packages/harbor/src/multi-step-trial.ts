import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { StartupTimeoutError, TaskFailure, type Environment, type TrialContext } from '@berth/core';
import { execTiming, runAgent, saveOutput, stderrTail, type HarborAgent } from './agent.js';
import { collectArtifacts, type ArtifactRecord } from './artifacts.js';
import type { HostEnv } from './env-template.js';
import { multiStepOutcome, stopReason, type StepExceptionInfo, type StepResultRecord } from './multi-step-reward.js';
import { awaitHealthy, onNetwork } from './sandbox-setup.js';
import type { StepTimer } from './steps.js';
import type { HarborOutcome, HarborStep, HarborTask } from './task.js';
import { runVerifier } from './verify.js';
import { runCollectCommands } from './verifier-collect.js';

// harbor's multi-step trial (MultiStepTrial._run / _run_step in trial/multi_step.py at harbor
// 39b85872, v0.22.0), in the sandbox the attempt started and prepared: for each step in order,
// /logs/agent emptied, steps/<name>/workdir/ uploaded into the workdir and its setup.sh run, the
// step's healthcheck, the agent with the step's instruction and timeout, the collect commands and
// the artifacts, the verifier with the task's tests/ and the step's merged in /tests and the step's
// env; then stop when the step failed without a result or missed its min_reward. The single-step
// pieces run unchanged on a view of the task with the step's settings.

export interface MultiStepRun {
  env: Environment;
  task: HarborTask;
  agent: HarborAgent;
  ctx: TrialContext;
  timer: StepTimer;
  /** The attempt directory: each step's files go to steps/<name>/. */
  dir: string;
  hostEnv: HostEnv;
  /** Filled as the steps run (so result.json has them whatever happens). */
  records: StepResultRecord[];
}

/** The task as one step sees it: the single-step pieces read their settings from it. */
export function stepView(task: HarborTask, step: HarborStep): HarborTask {
  const { solutionDir: _solution, agentTimeoutSec: _timeout, healthcheck: _health, verifierCollect: _collect, ...rest } = task;
  const collect = [...(task.verifierCollect ?? []), ...step.verifierCollect];
  return {
    ...rest,
    instructionPath: step.instructionPath,
    ...(step.solutionDir ? { solutionDir: step.solutionDir } : {}),
    ...(step.agentTimeoutSec !== undefined ? { agentTimeoutSec: step.agentTimeoutSec } : {}),
    verifierTimeoutSec: step.verifierTimeoutSec,
    users: step.users,
    network: { ...task.network, ...step.network },
    env: { ...task.env, verifier: { ...task.env.verifier, ...step.verifierEnv } },
    artifacts: [...task.artifacts, ...step.artifacts],
    ...(collect.length > 0 ? { verifierCollect: collect } : {}),
    ...(step.healthcheck ? { healthcheck: step.healthcheck } : {}),
  };
}

function exception(exceptionType: string, exceptionMessage: string): StepExceptionInfo {
  return { exceptionType, exceptionMessage, occurredAt: new Date().toISOString() };
}

async function asRoot(env: Environment, script: string, signal: AbortSignal): Promise<void> {
  const result = await env.exec(['sh', '-c', script], { user: '0', signal });
  if (result.exitCode !== 0) throw new Error(`${script} failed (exit ${result.exitCode}): ${result.stderr.trim()}`);
}

/** An empty directory open to every user (harbor's `empty_dirs(..., chmod=True)`). */
const emptied = (...dirs: string[]) => `rm -rf ${dirs.join(' ')} && mkdir -p ${dirs.join(' ')} && chmod 777 ${dirs.join(' ')}`;

/**
 * Before the agent, as the step's agent user: steps/<name>/workdir/ into the workdir, its setup.sh
 * run there (harbor: `bash setup.sh`; sh where the image has no bash), then the step's healthcheck.
 * Returns what stops the step (setup.sh's non-zero exit, a healthcheck that never passed).
 */
async function prepareStep(run: MultiStepRun, view: HarborTask, step: HarborStep, timer: StepTimer, stepDir: string, record: StepResultRecord) {
  const { env, ctx } = run;
  const { signal } = ctx;
  if (step.workdirDir) {
    const workdir = view.workdir ?? ((await env.exec(['pwd'], { signal })).stdout.trim() || '/');
    await timer.run('upload workdir', () => env.uploadDir(step.workdirDir!, workdir, { signal }));
    if (step.hasSetup) {
      const script = `${workdir.replace(/\/$/, '')}/setup.sh`;
      const result = await timer.run(
        'setup',
        () =>
          env.exec(['sh', '-c', 'command -v bash >/dev/null 2>&1 && exec bash "$1"; exec sh "$1"', 'sh', script], {
            cwd: workdir,
            ...(view.users.agent !== undefined ? { user: view.users.agent } : {}),
            signal,
          }),
        execTiming,
      );
      record.setupExitCode = result.exitCode;
      await saveOutput(stepDir, 'setup-', result);
      if (result.exitCode !== 0) return exception('RuntimeError', `Step '${step.name}' setup.sh exited with code ${result.exitCode}${stderrTail(result)}`);
    }
  }
  if (!step.healthcheck) return undefined;
  try {
    await timer.run('healthcheck', () => awaitHealthy(env, step.healthcheck!, signal));
    return undefined;
  } catch (error) {
    // The step's precondition (often: did the previous step leave what this one needs?) is the task's.
    if (signal.aborted || !StartupTimeoutError.isInstance(error)) throw error;
    return exception('HealthcheckError', error.message);
  }
}

/** A copy of /logs/artifacts as the step leaves it (the verifier's files too), then emptied for the next step. */
async function convention(run: MultiStepRun, view: HarborTask, stepDir: string, record: StepResultRecord, timer: StepTimer): Promise<void> {
  const { signal } = run.ctx;
  const after = await timer.run('artifacts after verifier', () => collectArtifacts(run.env, { ...view, artifacts: [] }, stepDir, signal));
  const artifacts: ArtifactRecord[] = record.artifacts ?? [];
  for (const r of after) {
    const i = artifacts.findIndex((a) => a.source === r.source && a.destination === r.destination);
    if (i === -1) artifacts.push(r);
    else if (r.status === 'copied') artifacts[i] = r;
  }
  record.artifacts = artifacts;
  await timer.run('reset artifacts', () => asRoot(run.env, emptied('/logs/artifacts'), signal));
}

async function runStep(run: MultiStepRun, step: HarborStep): Promise<StepResultRecord> {
  const { env, ctx, hostEnv } = run;
  const { signal } = ctx;
  const view = stepView(run.task, step);
  const timer = run.timer.scoped(step.name);
  const stepDir = join(run.dir, 'steps', step.name);
  const record: StepResultRecord = { name: step.name, startedAt: new Date().toISOString() };
  run.records.push(record);
  try {
    await mkdir(stepDir, { recursive: true });
    // A step starts a fresh agent session: what the previous one left in /logs/agent is in its own steps/<name>/agent/.
    await timer.run('reset agent logs', () => asRoot(env, emptied('/logs/agent'), signal));
    const stopped = await prepareStep(run, view, step, timer, stepDir, record);
    if (stopped) {
      record.exceptionInfo = stopped;
      return record;
    }
    const agentException = await onNetwork(env, view, view.network.agent, () =>
      runAgent(run.agent, { env, task: view, ctx, timer, outDir: join(stepDir, 'agent'), hostEnv }),
    );
    if (agentException) record.exceptionInfo = agentException;
    if (view.verifierCollect) record.collect = await runCollectCommands(env, view, stepDir, timer, signal);
    record.artifacts = await timer.run('artifacts', () => collectArtifacts(env, view, stepDir, signal));
    // harbor empties /logs/verifier and /tests before a step's shared verifier: no earlier step's files count.
    await timer.run('reset verifier', () => asRoot(env, `${emptied('/logs/verifier')} && rm -rf /tests`, signal));
    try {
      const outcome = await onNetwork(env, view, view.network.verifier, () =>
        runVerifier({ env, task: view, ctx, timer, outDir: join(stepDir, 'verifier'), hostEnv, uploadTests: true, testsDirs: step.testsDirs }),
      );
      record.verifierResult = { reward: outcome.reward, ...(outcome.rewards ? { rewards: outcome.rewards } : {}) };
    } catch (error) {
      // The verifier's own failure is the step's (as harbor records it); infrastructure ends the attempt.
      if (!TaskFailure.isInstance(error)) throw error;
      record.failure = { type: error.type, message: error.message };
      record.exceptionInfo ??= exception(error.type, error.message);
    }
    await convention(run, view, stepDir, record, timer);
    return record;
  } finally {
    record.endedAt = new Date().toISOString();
  }
}

/**
 * Run a multi-step task's steps in the started, prepared sandbox, in order, until one stops the run;
 * returns the attempt's outcome (the reward per `multi_step_reward_strategy`), or throws the
 * TaskFailure of a run in which no step that counts left a reward. Infrastructure errors (and an
 * agent function's own error, as in a single-step attempt) end the attempt unchanged.
 */
export async function runMultiStep(run: MultiStepRun): Promise<HarborOutcome> {
  for (const step of run.task.steps ?? []) {
    const record = await runStep(run, step);
    const reason = stopReason(step, record);
    if (reason) {
      record.stoppedRun = reason;
      break;
    }
  }
  const outcome = multiStepOutcome(run.task, run.records, { backend: run.env.backend, environmentId: run.env.id });
  if (TaskFailure.isInstance(outcome)) throw outcome;
  return outcome;
}
