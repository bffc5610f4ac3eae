import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { attemptDir, type AttemptResultFile, type HarborExceptionInfo, type HarborJobReport, type HarborTaskSummary } from '@berth/harbor';
import type { RunReport, SandboxAccounting, SerializedError } from '@berth/core';
import { UsageError } from '../usage-error.js';

/** One link of a failure's cause chain, as shown to a person. */
export interface CauseLink {
  name: string;
  type?: string;
  message: string;
}

/** One attempt of a finished job, from report.json and the attempt's result.json. */
export interface AttemptView {
  taskId: string;
  attempt: number;
  /** ms since epoch; absent when the attempt's result.json is missing. */
  startedAt?: number;
  endedAt?: number;
  durationMs: number;
  status: 'outcome' | 'failed';
  reward?: number;
  category?: string;
  type?: string;
  message?: string;
  /** The failure's cause chain, outermost first (secrets were redacted when it was written). */
  causes: CauseLink[];
  /** The attempt the run chose for its task (the first usable one). */
  chosen: boolean;
  /** <taskId>/attempt-<n>, relative to the job directory. */
  dir: string;
  /** The attempt's result.json, when it was written. */
  result?: AttemptResultFile;
}

export interface TaskView {
  summary: HarborTaskSummary;
  attempts: AttemptView[];
}

export interface JobData {
  jobDir: string;
  report: HarborJobReport;
  tasks: TaskView[];
}

/**
 * The agent's timeout or non-zero exit that harbor records and verifies past (its exception_info),
 * for the task's chosen attempt: rewarded (in report.json) or the verifier's task failure (in that
 * attempt's result.json).
 */
export function agentExceptionOf(task: TaskView): HarborExceptionInfo | undefined {
  return task.summary.exceptionInfo ?? task.attempts.find((a) => a.chosen)?.result?.exceptionInfo;
}

/**
 * The run's sandbox accounting (report.json's report.sandboxes); undefined for a job written by a
 * berth from before it kept one, which a report must say rather than show as zeros.
 */
export function sandboxesOf(job: JobData): SandboxAccounting | undefined {
  return (job.report.report as Partial<RunReport>).sandboxes;
}

/**
 * How many of the job's attempts (this session's: report.json records it for those) started from a
 * task's snapshot (runHarborJob's snapshotSetup), and how many snapshots; undefined when none did.
 */
export function snapshotUseOf(job: JobData): { attempts: number; snapshots: number; of: number } | undefined {
  const attempts = job.report.tasks.flatMap((t) => t.attempts);
  const used = attempts.filter((a) => a.snapshot !== undefined);
  if (used.length === 0) return undefined;
  return { attempts: used.length, snapshots: new Set(used.map((a) => a.snapshot)).size, of: attempts.length };
}

export function causeChain(error: SerializedError | undefined): CauseLink[] {
  const chain: CauseLink[] = [];
  for (let e = error; e && chain.length < 20; e = e.cause) {
    chain.push({ name: e.name, ...(e.type ? { type: e.type } : {}), message: e.message });
  }
  return chain;
}

async function readJson<T>(path: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as T;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

function attemptView(task: HarborTaskSummary, summary: HarborTaskSummary['attempts'][number], result: AttemptResultFile | undefined): AttemptView {
  const dir = join(task.taskId, `attempt-${summary.attempt}`);
  const failure = result?.failure;
  return {
    taskId: task.taskId,
    attempt: summary.attempt,
    ...(result ? { startedAt: Date.parse(result.startedAt), endedAt: Date.parse(result.endedAt) } : {}),
    durationMs: summary.durationMs,
    status: summary.status,
    ...(result?.outcome ? { reward: result.outcome.reward } : {}),
    ...(summary.category ? { category: summary.category } : {}),
    ...(summary.type ? { type: summary.type } : {}),
    ...(failure ? { message: failure.message } : {}),
    causes: causeChain(failure?.error),
    chosen: task.chosenAttempt === summary.attempt,
    dir,
    ...(result ? { result } : {}),
  };
}

/**
 * A finished job directory: report.json (written when `berth run` / runHarborJob ends) and every
 * attempt's result.json. A directory without report.json is a run that never finished: resume it.
 */
export async function loadJob(jobDirArg: string): Promise<JobData> {
  const jobDir = resolve(jobDirArg);
  const report = await readJson<HarborJobReport>(join(jobDir, 'report.json'));
  if (!report) {
    throw new UsageError(
      `${jobDir} has no report.json: it is not a job directory, or its run has not finished. ` +
        'Run the same `berth run ... --job-dir <dir>` again to resume it; the report is written when it ends',
    );
  }
  const tasks = await Promise.all(
    report.tasks.map(async (summary): Promise<TaskView> => {
      const attempts = await Promise.all(
        summary.attempts.map(async (a) => {
          const result = await readJson<AttemptResultFile>(join(attemptDir(jobDir, summary.taskId, a.attempt), 'result.json'));
          return attemptView(summary, a, result);
        }),
      );
      return { summary, attempts };
    }),
  );
  return { jobDir, report, tasks };
}
