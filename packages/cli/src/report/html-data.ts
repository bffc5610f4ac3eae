import type { RunReport } from '@berth/core';
import type { StepTiming } from '@berth/harbor';
import type { AttemptView, JobData } from '../job/job-data.js';
import { attemptOutcome, type AttemptOutcome } from './outcome.js';

/** One attempt as the page's script sees it (the detail panel shown when a bar is clicked). */
export interface AttemptData {
  taskId: string;
  attempt: number;
  outcome: AttemptOutcome;
  chosen: boolean;
  /** ISO time; absent when the attempt's result.json is missing. */
  startedAt?: string;
  durationMs: number;
  reward?: number;
  type?: string;
  message?: string;
  /** <taskId>/attempt-<n>, relative to the job directory. */
  dir: string;
  steps: StepTiming[];
}

/** The JSON embedded in report.html: the run's numbers and every attempt, for the script and for anyone saving the page. */
export interface ReportData {
  job: { jobDir: string; tasksDir?: string; agent: string; backend: string; startedAt: string; endedAt: string };
  report: RunReport;
  /** In task order, then attempt order: a bar's data-index is its place here. */
  attempts: AttemptData[];
}

/** Every attempt of the job in one order that the timeline and the embedded data share. */
export function jobAttempts(job: JobData): AttemptView[] {
  return job.tasks.flatMap((task) => task.attempts);
}

function attemptData(view: AttemptView): AttemptData {
  const started = view.startedAt !== undefined && Number.isFinite(view.startedAt) ? new Date(view.startedAt).toISOString() : undefined;
  return {
    taskId: view.taskId,
    attempt: view.attempt,
    outcome: attemptOutcome(view),
    chosen: view.chosen,
    ...(started ? { startedAt: started } : {}),
    durationMs: view.durationMs,
    ...(view.reward !== undefined ? { reward: view.reward } : {}),
    ...(view.type ? { type: view.type } : {}),
    ...(view.message ? { message: view.message } : {}),
    dir: view.dir,
    steps: view.result?.steps ?? [],
  };
}

export function reportData(job: JobData): ReportData {
  const { report: jobReport } = job;
  return {
    job: {
      jobDir: jobReport.jobDir,
      ...(jobReport.tasksDir ? { tasksDir: jobReport.tasksDir } : {}),
      agent: jobReport.agent,
      backend: jobReport.backend,
      startedAt: jobReport.startedAt,
      endedAt: jobReport.endedAt,
    },
    report: jobReport.report,
    attempts: jobAttempts(job).map(attemptData),
  };
}
