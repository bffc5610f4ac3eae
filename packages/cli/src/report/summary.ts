import { agentExceptionOf, sandboxesOf, snapshotUseOf, type JobData, type TaskView } from '../job/job-data.js';
import { paint, type Paint } from './ansi.js';
import { formatDuration } from '../duration.js';
import { formatRatio, formatReward, formatTimestamp, humanize, printable } from './format.js';
import { sandboxLines } from './sandbox-lines.js';
import { startPhaseLines } from './start-phases.js';
import { taskTable } from './task-table.js';
import { alignRows, type TextRow } from './text-table.js';

export interface SummaryOptions {
  /** ANSI colour; off by default so the text can go to a file or a pipe as is. */
  color?: boolean;
  /** How many tasks the per-task table lists (problems first). Default TASK_ROWS. */
  taskRows?: number;
}

/** How many of the slowest tasks the summary names. */
const SLOWEST = 3;

/**
 * The terminal summary of a finished job: validity first (a score must never be read without it),
 * then coverage and the mean beside each other, where every task went, and what failed how often.
 */
export function renderSummary(job: JobData, opts: SummaryOptions = {}): string {
  const p = paint(opts.color ?? false);
  const sections = [
    header(job, p),
    validity(job, p),
    scores(job, p),
    accounting(job, p),
    sandboxes(job, p),
    startPhaseLines(job, p),
    failures(job, p),
    slowest(job, p),
    taskTable(job, p, opts.taskRows),
  ];
  return `${sections
    .filter((lines) => lines.length > 0)
    .map((lines) => lines.join('\n'))
    .join('\n\n')}\n`;
}

function header(job: JobData, p: Paint): string[] {
  const { report: jobReport } = job;
  const when = `${formatTimestamp(jobReport.startedAt)} → ${formatTimestamp(jobReport.endedAt)}`;
  return [
    `${p.bold('berth job')} ${printable(job.jobDir)}`,
    p.dim(`${printable(jobReport.agent)} on ${printable(jobReport.backend)} · ${when} · ${formatDuration(jobReport.report.durationMs)}`),
  ];
}

function validity(job: JobData, p: Paint): string[] {
  const { report } = job.report;
  if (report.valid) return [p.green(p.bold('VALID'))];
  return [
    `${p.red(p.bold('INVALID'))} ${p.dim('— read no score from this run before fixing:')}`,
    ...report.invalidReasons.map((reason) => `  - ${printable(reason)}`),
  ];
}

function scores(job: JobData, p: Paint): string[] {
  const { report } = job.report;
  const coverage: TextRow = {
    label: 'coverage',
    value: formatRatio(report.coverage),
    note: `${report.scored} of ${report.total} tasks scored`,
    paintValue: (t) => p.bold(report.coverage < 1 ? p.yellow(t) : t),
  };
  const mean: TextRow = report.score
    ? {
        label: `mean ${report.score.field}`,
        value: formatRatio(report.score.mean),
        note: `over ${report.score.over} scored tasks (task failures as 0) · coverage ${formatRatio(report.score.coverage)}`,
        paintValue: p.bold,
      }
    : { label: 'mean reward', value: '—', note: 'no scored task has a numeric reward' };
  return alignRows([coverage, mean]);
}

function accounting(job: JobData, p: Paint): string[] {
  const { report } = job.report;
  const warn = (n: number, colour: (t: string) => string) => (n > 0 ? colour : undefined);
  const rows: TextRow[] = [
    { label: 'tasks', value: String(report.total) },
    { label: 'scored', value: String(report.scored), note: `incl. task failures ${report.taskFailures}` },
    {
      label: 'infra failed',
      value: String(report.infraFailed.total),
      note: `transient ${report.infraFailed.transient} · permanent ${report.infraFailed.permanent} · unclassified ${report.infraFailed.unclassified}`,
      ...optionalPaint(warn(report.infraFailed.total, p.red)),
    },
    {
      label: 'not run',
      value: String(report.notRun.total),
      note: `deadline ${report.notRun.deadline} · cancelled ${report.notRun.cancelled}`,
      ...optionalPaint(warn(report.notRun.total, p.yellow)),
    },
    { label: 'attempts', value: String(report.attempts), note: `retries ${report.retries}` },
  ];
  const agentRow = agentExceptions(job);
  if (agentRow) rows.splice(2, 0, agentRow);
  // Rarely non-zero, and then a reason the run is invalid: shown only when they matter.
  if (report.unscored > 0)
    rows.push({ label: 'unscored', value: String(report.unscored), note: `scored without a numeric ${report.score?.field ?? 'reward'}`, paintValue: p.yellow });
  return alignRows(rows);
}

/** Sandboxes created and removed, and each one left behind, named; a job from before berth counted them says so. */
function sandboxes(job: JobData, p: Paint): string[] {
  const account = sandboxesOf(job);
  const snapshots = snapshotUseOf(job);
  const fromSnapshots = snapshots
    ? [
        `snapshots: ${snapshots.attempts} of ${snapshots.of} attempts started from a task's snapshot (${snapshots.snapshots} snapshot${snapshots.snapshots === 1 ? '' : 's'}, --snapshot-setup)`,
      ]
    : [];
  if (!account) return [p.dim('sandboxes: not counted (this report.json was written by an older berth)'), ...fromSnapshots];
  return [...sandboxLines(account, p), ...fromSnapshots];
}

/** Tasks scored although their agent timed out or exited non-zero (harbor's exception_info); none: no row. */
function agentExceptions(job: JobData): TextRow | undefined {
  const counts: Record<string, number> = {};
  for (const task of job.tasks) {
    const type = agentExceptionOf(task)?.exceptionType;
    if (type) counts[type] = (counts[type] ?? 0) + 1;
  }
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  if (total === 0) return undefined;
  const types = Object.entries(counts)
    .sort(([a, x], [b, y]) => y - x || a.localeCompare(b))
    .map(([type, n]) => `${printable(type)} ${n}`);
  return { label: 'agent errors', value: String(total), note: `${types.join(' · ')} · verified anyway, as harbor does` };
}

function optionalPaint(colour: ((t: string) => string) | undefined): Pick<TextRow, 'paintValue'> {
  return colour ? { paintValue: colour } : {};
}

/** Largest first; ties by name so the output is stable. */
function countRows(counts: Record<string, number>, label: (key: string) => string): TextRow[] {
  return Object.entries(counts)
    .sort(([a, x], [b, y]) => y - x || a.localeCompare(b))
    .map(([key, n]) => ({ label: label(key), value: String(n) }));
}

function failures(job: JobData, p: Paint): string[] {
  const { report } = job.report;
  const byCategory = countRows(report.byCategory, (c) => humanize(printable(c)));
  const byType = countRows(report.byType, printable);
  if (byCategory.length === 0 && byType.length === 0) return [p.dim('no failed attempts')];
  return [p.bold('failed attempts by category'), ...alignRows(byCategory), '', p.bold('failed attempts by type'), ...alignRows(byType)];
}

function taskTime(task: TaskView): number {
  return task.attempts.reduce((sum, a) => sum + a.durationMs, 0);
}

function taskResult(task: TaskView): string {
  const { summary } = task;
  const attempts = `${summary.attempts.length} attempt${summary.attempts.length === 1 ? '' : 's'}`;
  const what =
    summary.status === 'rewarded' && summary.reward !== undefined
      ? `reward ${formatReward(summary.reward)}`
      : summary.status === 'not_run'
        ? `not run (${summary.notRunReason ?? 'deadline'})`
        : `${humanize(summary.status)}${summary.failureType ? ` (${printable(summary.failureType)})` : ''}`;
  return `${what}, ${attempts}`;
}

function slowest(job: JobData, p: Paint): string[] {
  const ran = job.tasks.filter((t) => t.attempts.length > 0);
  if (ran.length < 2) return [];
  const rows = [...ran]
    .sort((a, b) => taskTime(b) - taskTime(a) || a.summary.taskId.localeCompare(b.summary.taskId))
    .slice(0, SLOWEST)
    .map((t): TextRow => ({ label: printable(t.summary.taskId), value: formatDuration(taskTime(t)), note: p.dim(taskResult(t)) }));
  return [p.bold('slowest tasks'), ...alignRows(rows)];
}
