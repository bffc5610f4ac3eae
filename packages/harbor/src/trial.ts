import { mkdir, readFile, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { describeImage, serializeError, type Backend, type Environment, type TrialContext, type TrialFunction } from '@berth/core';
import { agentName, checkAgentCanRun, runAgent, type HarborAgent } from './agent.js';
import { definitionProblems, taskDefinitionError } from './task-preflight.js';
import { collectArtifacts } from './artifacts.js';
import type { HostEnv } from './env-template.js';
import { afterAgentException, type HarborExceptionInfo } from './exception-info.js';
import { attemptDir, describeFailure, writeJsonFile, type AttemptResultFile } from './result-file.js';
import { runMultiStep } from './multi-step-trial.js';
import { onNetwork, setUpTaskSandbox } from './sandbox-setup.js';
import { startVerifierSandbox } from './separate-verifier.js';
import { buildSpec, resolvedEnvironment, type SpecOverrides } from './spec.js';
import { StepTimer } from './steps.js';
import type { HarborOutcome, HarborTask } from './task.js';
import { runVerifier } from './verify.js';
import { runCollectCommands } from './verifier-collect.js';
import type { TaskSnapshots } from './snapshot-setup.js';

export interface HarborHooks {
  /** Runs right after the sandbox started, before the agent: tests use it to inject faults. */
  afterStart?(env: Environment, task: HarborTask, ctx: TrialContext): Promise<void>;
}

export interface HarborTrialOptions {
  backend: Backend;
  /** Attempts write to <jobDir>/<taskId>/attempt-<n>/. */
  jobDir: string;
  /** Default 'oracle'. */
  agent?: HarborAgent;
  specOverrides?: SpecOverrides;
  hooks?: HarborHooks;
  /** Where `${VAR}` templates of the env tables are looked up. Default: process.env. */
  hostEnv?: HostEnv;
  /** Start each trial from its task's snapshot, made once per task by a setup command (see runHarborJob's snapshotSetup). */
  snapshots?: TaskSnapshots;
}

/**
 * One attempt at a harbor task, for runTrials, as harbor runs it (`SingleStepTrial._run`): start a
 * sandbox (pulled or built), prepare /logs, copy a prebuilt task's environment/, wait for its
 * healthcheck, run the agent on the agent's network, run its `[[verifier.collect]]` commands, copy
 * the artifacts out, run the verifier on the verifier's network (in the same sandbox, or in a new
 * one after the agent's is gone), read the reward, tear down, and write
 * <jobDir>/<taskId>/attempt-<n>/result.json whatever happened (with the resolved environment and
 * every note). An agent that times out (or a command agent that exits non-zero) does not end the
 * attempt: as in harbor, it is recorded (`exceptionInfo`) and the verifier's reward counts.
 * Returns `{ reward, rewards?, exceptionInfo? }` or throws:
 * - a TaskFailure (RewardFileMissing, RewardFileEmpty, RewardFileInvalid, VerifierTimeout) when
 *   the sandbox worked and the task did not (its message also names the agent's exception);
 * - berth's own error, unchanged, when the infrastructure failed (so runTrials can tell a lost
 *   sandbox, worth a retry, from an image nobody can pull, which is not).
 */
/**
 * A task's directory holding attempts of another version of the task (result.json's taskVersion):
 * moved to `<taskId>.replaced-<time>` beside it, so that running the changed task again from
 * attempt 1 deletes nothing of what the earlier version did.
 */
async function setAsideOtherVersion(taskDir: string, version: string | undefined): Promise<void> {
  if (version === undefined) return;
  const entries = await readdir(taskDir).catch(() => [] as string[]);
  for (const entry of entries) {
    if (!entry.startsWith('attempt-')) continue;
    const text = await readFile(join(taskDir, entry, 'result.json'), 'utf8').catch(() => undefined);
    const recorded = text === undefined ? undefined : (JSON.parse(text) as { taskVersion?: string }).taskVersion;
    if (recorded === undefined || recorded === version) continue;
    await rename(taskDir, `${taskDir}.replaced-${new Date().toISOString().replace(/[:.]/g, '-')}`);
    return;
  }
}

export function createHarborTrial(options: HarborTrialOptions): TrialFunction<HarborTask, HarborOutcome> {
  const { backend, jobDir, agent = 'oracle', specOverrides, hooks, hostEnv = process.env, snapshots } = options;

  return async (task, ctx) => {
    const dir = attemptDir(jobDir, task.id, ctx.attempt);
    // The attempts of an earlier version of the task (its files changed since) are kept, moved aside.
    await setAsideOtherVersion(join(jobDir, task.id), task.contentHash);
    // A directory left by an attempt the process died under (resumed runs continue numbering, but
    // a hand-run trial may not): start clean so no stale file is mistaken for this attempt's.
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });

    const startedAt = new Date();
    const t0 = performance.now();
    const timer = new StepTimer(t0);
    const record: AttemptResultFile = {
      taskId: task.id,
      ...(task.contentHash ? { taskVersion: task.contentHash } : {}),
      attempt: ctx.attempt,
      agent: agentName(agent),
      backend: backend.name,
      image: 'ref' in task.image ? task.image.ref : `built from ${task.image.build.context}`,
      startedAt: startedAt.toISOString(),
      endedAt: '',
      durationMs: 0,
      steps: timer.steps,
      ...(task.notes.length > 0 ? { notes: [...task.notes] } : {}),
    };

    // Every sandbox this attempt made, torn down in the end whatever happened (once each).
    const sandboxes: Array<{ step: string; env: Environment; done?: boolean }> = [];
    const tearDown = async (entry: { step: string; env: Environment; done?: boolean }) => {
      if (entry.done) return;
      entry.done = true;
      // Without the attempt's signal: a cancelled attempt must still remove its sandbox. A
      // teardown failure is recorded, never allowed to replace the attempt's own result. Through
      // ctx.sandboxes, so the run's report counts it (created, removed, or named as left behind).
      try {
        await timer.run(entry.step, () => ctx.sandboxes.teardown(entry.env));
      } catch (error) {
        record.teardownError ??= serializeError(error);
      }
    };
    let failed: { error: unknown } | undefined;
    // What harbor records in exception_info and goes on from (the agent's timeout...).
    let agentException: HarborExceptionInfo | undefined;
    try {
      // The task's own mistakes (a CRLF script, no verifier, no solution for the oracle): no sandbox, no score.
      const problems = definitionProblems(task, agent);
      if (problems.length > 0) throw taskDefinitionError(task, problems);
      checkAgentCanRun(agent, task, hostEnv);
      const { spec, notes } = buildSpec(task, backend, specOverrides, hostEnv);
      record.environment = resolvedEnvironment(task, spec);
      if (notes.length > 0) record.notes = [...(record.notes ?? []), ...notes];
      // The task set up once, snapshotted: this trial starts from that image instead.
      if (snapshots) record.snapshot = await timer.run('snapshot setup', () => snapshots.forTask(task, ctx.attempt, spec, ctx.signal));
      // environment() then start() rather than backend.start(): the same thing, but the sandbox id
      // is known even when starting fails (a pull refused...), and teardown below removes it.
      const sandbox = backend.environment(record.snapshot ? { ...spec, image: record.snapshot.ref } : spec);
      ctx.sandboxes.track(sandbox);
      const agentSandbox = { step: 'teardown', env: sandbox };
      sandboxes.push(agentSandbox);
      record.environmentId = sandbox.id;
      record.image = describeImage(sandbox.spec.image);
      const { signal } = ctx;
      await timer.run('start', () => sandbox.start({ signal }));
      if (hooks?.afterStart) await timer.run('hook afterStart', () => hooks.afterStart!(sandbox, task, ctx));
      await setUpTaskSandbox(sandbox, task, signal, (name, work) => timer.run(name, work));

      if (task.steps) {
        // harbor's MultiStepTrial: each step's agent and verifier in this sandbox (multi-step-trial.ts).
        record.stepResults = [];
        const run = { env: sandbox, task, agent, ctx, timer, dir, hostEnv, records: record.stepResults };
        record.outcome = await runMultiStep(run);
      } else {
        agentException = await onNetwork(sandbox, task, task.network.agent, () =>
          runAgent(agent, { env: sandbox, task, ctx, timer, outDir: join(dir, 'agent'), hostEnv }),
        );
        if (agentException) record.exceptionInfo = agentException;
        // harbor's [[verifier.collect]]: after the agent, back on the environment's network, before any artifact is copied out.
        if (task.verifierCollect) record.collect = await runCollectCommands(sandbox, task, dir, timer, signal);
        // As harbor, in both verifier modes: the artifacts are what the agent (and collect) left, never what the verifier wrote.
        const artifacts = await timer.run('artifacts', () => collectArtifacts(sandbox, task, dir, signal));
        record.artifacts = artifacts;
        const verify = { task, ctx, timer, outDir: join(dir, 'verifier'), hostEnv };
        let outcome: HarborOutcome;
        if (task.verifierEnvironment) {
          // harbor's separate verifier: the agent's sandbox is gone, then a new one gets the artifacts.
          await tearDown(agentSandbox);
          const made = (env: Environment, notes: string[]) => {
            ctx.sandboxes.track(env);
            sandboxes.push({ step: 'teardown verifier', env });
            record.verifierEnvironmentId = env.id;
            if (notes.length > 0) record.notes = [...(record.notes ?? []), ...notes.map((n) => `verifier sandbox: ${n}`)];
          };
          const verifierSandbox = await startVerifierSandbox({
            backend,
            task,
            ctx,
            timer,
            dir,
            hostEnv,
            ...(specOverrides ? { specOverrides } : {}),
            artifacts,
            made,
          });
          outcome = await runVerifier({ ...verify, env: verifierSandbox, uploadTests: !task.verifierEnvironment.testsBundled });
        } else {
          outcome = await onNetwork(sandbox, task, task.network.verifier, () => runVerifier({ ...verify, env: sandbox, uploadTests: true }));
        }
        record.outcome = agentException ? { ...outcome, exceptionInfo: agentException } : outcome;
      }
    } catch (error) {
      failed = { error: agentException ? afterAgentException(error, agentException) : error };
      record.failure = describeFailure(failed.error);
    } finally {
      for (const entry of sandboxes) await tearDown(entry);
      record.endedAt = new Date().toISOString();
      record.durationMs = Math.round(performance.now() - t0);
    }

    const writing = writeJsonFile(join(dir, 'result.json'), record);
    if (failed) {
      await writing.catch(() => undefined);
      throw failed.error;
    }
    await writing;
    return record.outcome!;
  };
}
