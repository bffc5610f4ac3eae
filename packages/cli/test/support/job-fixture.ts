// A finished job built by hand, for the report renderers' tests: every kind of task ending (a
// reward, a retried transient failure, a task failure, permanent and unclassified infrastructure
// failures, a task the deadline stopped) and an attempt whose result.json is missing. Its
// report is core's buildRunReport over the records runTrials would have kept for it.
import { buildRunReport, type AttemptFailure, type AttemptRecord, type RunReport, type TaskRecord } from '@berth/core';
import type { AttemptResultFile, HarborJobReport, HarborTaskSummary } from '@berth/harbor';
import type { AttemptView, CauseLink, JobData, TaskView } from '../../src/job/job-data.js';

export const RUN_START = Date.parse('2026-01-10T12:00:00.000Z');
const iso = (offsetMs: number) => new Date(RUN_START + offsetMs).toISOString();

interface AttemptSpec {
  /** [start, end] in ms from the run's start; absent: no result.json was written. */
  at?: [number, number];
  durationMs?: number;
  reward?: number;
  category?: string;
  type?: string;
  message?: string;
  causes?: CauseLink[];
}

interface TaskSpec {
  taskId: string;
  status: HarborTaskSummary['status'];
  chosenAttempt?: number;
  notRunReason?: 'deadline' | 'cancelled';
  attempts: AttemptSpec[];
}

function resultFile(taskId: string, attempt: number, spec: AttemptSpec & { at: [number, number] }): AttemptResultFile {
  const [start, end] = spec.at;
  return {
    taskId,
    attempt,
    agent: 'oracle',
    backend: 'docker',
    image: 'berth-test/busybox:latest',
    startedAt: iso(start),
    endedAt: iso(end),
    durationMs: end - start,
    steps: [
      { name: 'start', offsetMs: 0, durationMs: 300, ended: 'completed' },
      { name: 'verifier', offsetMs: 300, durationMs: Math.max(0, end - start - 400), ended: 'completed', exitCode: 0 },
    ],
    ...(spec.reward !== undefined ? { outcome: { reward: spec.reward } } : {}),
  };
}

function taskView(spec: TaskSpec): TaskView {
  const last = spec.attempts.at(-1);
  const chosen = spec.chosenAttempt !== undefined ? spec.attempts[spec.chosenAttempt - 1] : undefined;
  const final = spec.status === 'rewarded' ? undefined : spec.status === 'task_failed' ? chosen : last;
  const summary: HarborTaskSummary = {
    taskId: spec.taskId,
    status: spec.status,
    ...(spec.chosenAttempt !== undefined ? { chosenAttempt: spec.chosenAttempt } : {}),
    ...(spec.status === 'rewarded' && chosen?.reward !== undefined ? { reward: chosen.reward } : {}),
    ...(final?.category ? { failureCategory: final.category, failureType: final.type, failureMessage: final.message } : {}),
    ...(spec.notRunReason ? { notRunReason: spec.notRunReason } : {}),
    attempts: spec.attempts.map((a, i) => ({
      attempt: i + 1,
      status: a.category ? 'failed' : 'outcome',
      ...(a.category ? { category: a.category, type: a.type } : {}),
      durationMs: a.at ? a.at[1] - a.at[0] : (a.durationMs ?? 0),
    })),
  };
  const attempts = spec.attempts.map((a, i): AttemptView => {
    const attempt = i + 1;
    const { at } = a;
    return {
      taskId: spec.taskId,
      attempt,
      ...(at ? { startedAt: RUN_START + at[0], endedAt: RUN_START + at[1] } : {}),
      durationMs: summary.attempts[i]!.durationMs,
      status: a.category ? 'failed' : 'outcome',
      ...(a.reward !== undefined ? { reward: a.reward } : {}),
      ...(a.category ? { category: a.category } : {}),
      ...(a.type ? { type: a.type } : {}),
      // Without result.json, loadJob has neither the message nor the chain.
      ...(a.message && at ? { message: a.message } : {}),
      causes: at ? (a.causes ?? []) : [],
      chosen: spec.chosenAttempt === attempt,
      dir: `${spec.taskId}/attempt-${attempt}`,
      ...(at ? { result: resultFile(spec.taskId, attempt, { ...a, at }) } : {}),
    };
  });
  return { summary, attempts };
}

export const PULL_MESSAGE = 'pulling 127.0.0.1:5000/berth/private:latest failed: no basic auth credentials';

const TASKS: TaskSpec[] = [
  { taskId: 'solve-pass', status: 'rewarded', chosenAttempt: 1, attempts: [{ at: [0, 40_000], reward: 1 }] },
  {
    taskId: 'flaky-net',
    status: 'rewarded',
    chosenAttempt: 2,
    attempts: [
      {
        at: [0, 5_000],
        category: 'transient_infra',
        type: 'SandboxLostError',
        message: 'the container went away',
        causes: [{ name: 'SandboxLostError', type: 'SandboxLostError', message: 'the container went away' }],
      },
      { at: [6_000, 50_000], reward: 0.5 },
    ],
  },
  {
    taskId: 'crash-verifier',
    status: 'task_failed',
    chosenAttempt: 1,
    attempts: [
      {
        at: [1_000, 30_000],
        category: 'task_failure',
        type: 'RewardFileMissing',
        message: 'the verifier wrote no reward',
        causes: [{ name: 'TaskFailure', type: 'RewardFileMissing', message: 'the verifier wrote no reward' }],
      },
    ],
  },
  {
    taskId: 'private-img',
    status: 'infra_failed',
    attempts: [
      {
        at: [2_000, 2_300],
        category: 'permanent_infra',
        type: 'ImagePullError',
        message: PULL_MESSAGE,
        causes: [
          { name: 'ImagePullError', type: 'ImagePullError', message: PULL_MESSAGE },
          { name: 'Error', message: '(HTTP code 500) server error - no basic auth credentials' },
        ],
      },
    ],
  },
  {
    taskId: 'weird-error',
    status: 'infra_failed',
    attempts: [{ durationMs: 1_200, category: 'unclassified', type: 'TypeError', message: 'x is not a function' }],
  },
  {
    taskId: 'late-task',
    status: 'not_run',
    notRunReason: 'deadline',
    attempts: [
      {
        at: [40_000, 90_000],
        category: 'cancelled',
        type: 'CancelledError',
        message: 'the run reached its deadline',
        causes: [{ name: 'CancelledError', type: 'CancelledError', message: 'the run reached its deadline' }],
      },
    ],
  },
];

/**
 * The run record core's runTrials would have kept for a task: its attempts (each made and removed
 * one sandbox, but a failed pull: nothing is created before the pull), what was chosen.
 */
function taskRecord(spec: TaskSpec): TaskRecord {
  const attempts = spec.attempts.map((a, i): AttemptRecord => {
    const [start, end] = a.at ?? [0, a.durationMs ?? 0];
    const made = a.type === 'ImagePullError' ? 0 : 1;
    return {
      taskId: spec.taskId,
      attempt: i + 1,
      startedAt: RUN_START + start,
      endedAt: RUN_START + end,
      durationMs: end - start,
      status: a.category ? 'failed' : 'outcome',
      ...(a.reward !== undefined ? { outcome: { reward: a.reward } } : {}),
      ...(a.category
        ? {
            failure: {
              category: a.category as AttemptFailure['category'],
              type: a.type!,
              message: a.message ?? '',
              unclassified: a.category === 'unclassified',
              retryable: a.category === 'transient_infra',
              error: { name: a.type!, message: a.message ?? '' },
              ...(a.category === 'cancelled' ? { stoppedBy: 'deadline' as const } : {}),
            },
          }
        : {}),
      sandboxes: { created: made, removed: made, notRemoved: [] },
    };
  });
  const chosen = spec.chosenAttempt !== undefined ? attempts[spec.chosenAttempt - 1] : undefined;
  const status = spec.status === 'rewarded' || spec.status === 'task_failed' ? 'scored' : spec.status;
  const failure = spec.status === 'task_failed' ? chosen?.failure : spec.status === 'rewarded' ? undefined : attempts.at(-1)?.failure;
  return {
    taskId: spec.taskId,
    status,
    ...(spec.chosenAttempt !== undefined ? { chosenAttempt: spec.chosenAttempt } : {}),
    ...(chosen?.outcome ? { outcome: chosen.outcome } : {}),
    ...(failure ? { failure } : {}),
    ...(spec.notRunReason ? { notRunReason: spec.notRunReason } : {}),
    attempts,
  };
}

/** The fixture's report, as core's buildRunReport makes it from those records (never worked out by hand). */
export const FIXTURE_REPORT: RunReport = buildRunReport(TASKS.map(taskRecord), { durationMs: 95_000 });

/** The job, with task ids (and optionally messages) rewritten, e.g. into hostile text. */
export function fixtureJob(options: { rename?: (taskId: string) => string; message?: (message: string) => string } = {}): JobData {
  const rename = options.rename ?? ((id: string) => id);
  const message = options.message ?? ((m: string) => m);
  const specs = TASKS.map((t) => ({
    ...t,
    taskId: rename(t.taskId),
    attempts: t.attempts.map((a) => ({
      ...a,
      ...(a.message ? { message: message(a.message) } : {}),
      ...(a.causes ? { causes: a.causes.map((c) => ({ ...c, message: message(c.message) })) } : {}),
    })),
  }));
  const tasks = specs.map(taskView);
  const jobDir = '/tmp/berth-jobs/fixture-job';
  const report: HarborJobReport = {
    jobDir,
    tasksDir: '/tmp/berth-datasets/fixture',
    agent: 'oracle',
    backend: 'docker',
    startedAt: iso(0),
    endedAt: iso(95_000),
    report: structuredClone(FIXTURE_REPORT),
    tasks: tasks.map((t) => t.summary),
  };
  return { jobDir, report, tasks };
}

/** The fixture's report with some numbers replaced (validity, score...), for the cases it does not cover. */
export function withReport(job: JobData, patch: Partial<RunReport>): JobData {
  const report = { ...job.report.report, ...patch };
  return { ...job, report: { ...job.report, report } };
}
