import { createHash } from 'node:crypto';
import { join, relative, resolve } from 'node:path';
import {
  ConfigError,
  RunMismatchError,
  pooled,
  remedied,
  runTrials,
  type Backend,
  type PoolOptions,
  type RunReport,
  type RunResult,
  type RunTrialsOptions,
  type TaskRecord,
} from '@berth/core';
import { agentName, type HarborAgent } from './agent.js';
import { loadHarborTasks } from './load-task.js';
import { setJobAside } from './job-dir.js';
import { attemptDir, writeJsonFile } from './result-file.js';
import type { HostEnv } from './env-template.js';
import type { HarborExceptionInfo } from './exception-info.js';
import type { SpecOverrides } from './spec.js';
import type { HarborOutcome, HarborStepSummary, HarborTask } from './task.js';
import { createHarborTrial, type HarborHooks } from './trial.js';
import { TaskSnapshots, attemptKey, type SnapshotSetup, type SnapshotUse } from './snapshot-setup.js';

export interface HarborJobOptions extends Omit<RunTrialsOptions<HarborTask>, 'journal' | 'taskId' | 'runIdentity' | 'taskVersion'> {
  /** The tasks to run; or give tasksDir. */
  tasks?: HarborTask[];
  /**
   * A dataset directory (each subdirectory a task), or one task directory. With `tasks` as well
   * (e.g. a filtered selection of it), the tasks are not loaded again: it is only recorded in
   * report.json, where offline tools (regrade) find the tasks' files.
   */
  tasksDir?: string;
  backend: Backend;
  /** Everything the job writes: attempts, journal.jsonl, report.json. */
  jobDir: string;
  /** Default 'oracle'. */
  agent?: HarborAgent;
  /**
   * What tells this agent from another when a job is resumed (a model and version, a command's
   * hash): a resume with another agentId is refused. Default: 'oracle', 'none', a command's hash
   * (`command sha256:…`: the command may carry a key, so its text is never kept), or a function's
   * name. Shown in that refusal: no secrets.
   */
  agentId?: string;
  specOverrides?: SpecOverrides;
  hooks?: HarborHooks;
  /** Where `${VAR}` templates of the tasks' env tables are looked up. Default: process.env. */
  hostEnv?: HostEnv;
  /**
   * The run journal. Default <jobDir>/journal.jsonl, so running the same job directory again
   * resumes it (settled attempts are reused, none run twice); false for none. A resume never mixes
   * runs: another agent (agentId), backend, backend target or specOverrides is refused with a
   * RunMismatchError, and a task whose files changed (HarborTask.contentHash) runs again.
   */
  journal?: string | false;
  /** Start over: an existing job directory is moved aside to `<jobDir>.replaced-<time>` (never deleted). */
  fresh?: boolean;
  /**
   * Start trials' sandboxes from warm pools (`pooled(backend, pool)`): one pool per distinct spec,
   * made at its first trial, closed when the job ends (or when not claimed from for maxIdleMs, as
   * a job moves on to other tasks). Worth it for many trials of the same tasks (RL loops, -k
   * trials). Not part of the run's identity: a resume with or without pools is the same run.
   */
  pool?: PoolOptions;
  /**
   * Set each task up once and start every trial of it from a snapshot of that (opt-in; the backend
   * must claim `capabilities.snapshot`): a sandbox of the task's environment is started, set up as a
   * trial's would be, `command` run in it as root (an agent's install, caches warmed), and snapshotted;
   * every trial of the task then starts from the snapshot (its result.json says which, and
   * report.json's attempts carry `snapshot`). A command that fails is a ConfigError naming
   * `snapshotSetup.command` (the run's configuration, never a task's zero). The snapshots are removed
   * when the job ends. Part of the run's identity (by a hash of the command).
   */
  snapshotSetup?: SnapshotSetup;
}

/**
 * What became of a task, in harbor's words: 'rewarded' (the verifier wrote a reward),
 * 'task_failed' (the sandbox worked, the task did not: no reward, a timeout...; it counts as 0),
 * 'infra_failed' (no attempt got through the infrastructure) or 'not_run' (stopped first).
 */
export type HarborTaskStatus = 'rewarded' | 'task_failed' | 'infra_failed' | 'not_run';

/** One task's line in report.json. */
export interface HarborTaskSummary {
  taskId: string;
  status: HarborTaskStatus;
  /** The first usable attempt (never the best reward). */
  chosenAttempt?: number;
  reward?: number;
  rewards?: Record<string, number>;
  /** The chosen attempt's agent timed out (or a command agent exited non-zero) and was verified anyway, as harbor records it. */
  exceptionInfo?: HarborExceptionInfo;
  /** A multi-step task's steps in the chosen attempt: each one's reward, what went wrong in it, or skipped. */
  steps?: HarborStepSummary[];
  /** For a task failure (chosen), or the last failure of an infra_failed / not_run task. */
  failureCategory?: string;
  failureType?: string;
  failureMessage?: string;
  notRunReason?: 'deadline' | 'cancelled';
  /** `snapshot`: the snapshot the attempt's sandbox started from (snapshotSetup), for attempts of this session. */
  attempts: Array<{ attempt: number; status: 'outcome' | 'failed'; category?: string; type?: string; durationMs: number; snapshot?: string }>;
  /** result.json of the chosen attempt, else of the last one; relative to the job directory. */
  resultPath?: string;
}

/** <jobDir>/report.json. */
export interface HarborJobReport {
  jobDir: string;
  tasksDir?: string;
  agent: string;
  backend: string;
  startedAt: string;
  endedAt: string;
  report: RunReport;
  resume?: RunResult['resume'];
  tasks: HarborTaskSummary[];
}

function summarise(jobDir: string, record: TaskRecord<HarborOutcome>, snapshots?: ReadonlyMap<string, SnapshotUse>): HarborTaskSummary {
  const summary: HarborTaskSummary = {
    taskId: record.taskId,
    status: record.status === 'scored' ? (record.outcome ? 'rewarded' : 'task_failed') : record.status,
    attempts: record.attempts.map((a) => ({
      attempt: a.attempt,
      status: a.status,
      ...(a.failure ? { category: a.failure.category, type: a.failure.type } : {}),
      durationMs: a.durationMs,
      ...(snapshots?.has(attemptKey(record.taskId, a.attempt)) ? { snapshot: snapshots.get(attemptKey(record.taskId, a.attempt))!.ref } : {}),
    })),
  };
  if (record.chosenAttempt !== undefined) summary.chosenAttempt = record.chosenAttempt;
  if (record.outcome) {
    summary.reward = record.outcome.reward;
    if (record.outcome.rewards) summary.rewards = record.outcome.rewards;
    if (record.outcome.exceptionInfo) summary.exceptionInfo = record.outcome.exceptionInfo;
    if (record.outcome.steps) summary.steps = record.outcome.steps;
  }
  if (record.failure) {
    summary.failureCategory = record.failure.category;
    summary.failureType = record.failure.type;
    summary.failureMessage = record.failure.message;
  }
  if (record.notRunReason) summary.notRunReason = record.notRunReason;
  const shown = record.chosenAttempt ?? record.attempts.at(-1)?.attempt;
  if (shown !== undefined) {
    summary.resultPath = join(relative(jobDir, attemptDir(jobDir, record.taskId, shown)), 'result.json');
  }
  return summary;
}

function shortHash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 12);
}

/** What decides a job's results besides its tasks; values shown when a resume is refused. */
function jobIdentity(backend: Backend, agent: HarborAgent, agentId: string | undefined, specOverrides: SpecOverrides | undefined): Record<string, string> {
  const agentDefault = typeof agent === 'object' ? `command sha256:${shortHash(agent.command)}` : agentName(agent);
  const identity: Record<string, string> = { agent: agentId ?? agentDefault, backend: backend.name, target: backend.target };
  if (specOverrides !== undefined) {
    // Hashed: overrides may carry env values. A function is known by its source.
    const text = typeof specOverrides === 'function' ? specOverrides.toString() : JSON.stringify(specOverrides);
    identity.specOverrides = `sha256:${shortHash(text)}`;
  }
  return identity;
}

/**
 * Run a set of harbor tasks through runTrials (bounded concurrency, retries of transient infra
 * failures only, first usable attempt chosen, honest report), writing per-attempt result.json
 * files and <jobDir>/report.json. Returns runTrials' result.
 */
export async function runHarborJob(options: HarborJobOptions): Promise<RunResult<HarborOutcome>> {
  const {
    tasks: given,
    tasksDir,
    backend,
    agent = 'oracle',
    agentId,
    specOverrides,
    hooks,
    hostEnv,
    journal,
    jobDir: jobDirOption,
    fresh,
    pool,
    snapshotSetup,
    ...runOptions
  } = options;
  if (given === undefined && tasksDir === undefined) {
    throw new ConfigError({ operation: 'config', path: 'tasks', message: 'runHarborJob needs tasks or a tasksDir to load them from' });
  }
  const jobDir = resolve(jobDirOption);
  const tasks = given ?? (await loadHarborTasks(tasksDir!, hostEnv ? { hostEnv } : {}));
  const journalPath = journal === false ? undefined : (journal ?? resolve(jobDir, 'journal.jsonl'));
  const snapshots = snapshotSetup ? new TaskSnapshots(backend, snapshotSetup) : undefined;
  const runIdentity = {
    ...jobIdentity(backend, agent, agentId, specOverrides),
    ...(snapshotSetup ? { snapshotSetup: `sha256:${shortHash(snapshotSetup.command)}` } : {}),
  };
  if (fresh) await setJobAside(jobDir);

  const startedAt = new Date();
  // Each task's sandboxes differ (its label), so each pool serves one task: it never needs more
  // than the attempts a task may take (runTrials' default 3), and starts none after the last.
  const pools = pool ? pooled(backend, { maxClaims: runOptions.maxAttempts ?? 3, ...pool }) : undefined;
  const trial = createHarborTrial({
    backend: pools ?? backend,
    jobDir,
    agent,
    ...(specOverrides ? { specOverrides } : {}),
    ...(hooks ? { hooks } : {}),
    ...(hostEnv ? { hostEnv } : {}),
    ...(snapshots ? { snapshots } : {}),
  });
  let result: RunResult<HarborOutcome>;
  try {
    result = await runTrials(tasks, trial, {
      ...runOptions,
      taskId: (task) => task.id,
      ...(journalPath ? { journal: journalPath, runIdentity, taskVersion: (task: HarborTask) => task.contentHash ?? '', ...(fresh ? { fresh } : {}) } : {}),
    });
  } catch (error) {
    if (!RunMismatchError.isInstance(error) || !(error instanceof RunMismatchError)) throw error;
    throw new RunMismatchError({
      operation: 'config',
      path: 'jobDir',
      location: jobDir,
      changes: error.changes,
      ...remedied(
        'fresh-job',
        'pass fresh: true to start over (the old job is moved aside, not deleted), or use another jobDir',
        (fix) => `job directory ${jobDir} holds a different run: ${error.changes.join('; ')}; resume with the same tasks and options, or ${fix}`,
      ),
      cause: error,
    });
  } finally {
    // Every sandbox still waiting in a pool goes with the job, and every snapshot it made.
    await pools?.close();
    await snapshots?.removeAll();
  }

  const jobReport: HarborJobReport = {
    jobDir,
    ...(tasksDir ? { tasksDir: resolve(tasksDir) } : {}),
    agent: agentName(agent),
    backend: backend.name,
    startedAt: startedAt.toISOString(),
    endedAt: new Date().toISOString(),
    report: result.report,
    ...(result.resume ? { resume: result.resume } : {}),
    tasks: result.tasks.map((t) => summarise(jobDir, t, snapshots?.uses)),
  };
  await writeJsonFile(resolve(jobDir, 'report.json'), jobReport);
  return result;
}
