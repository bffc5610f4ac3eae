import { cliWords, remediesOf } from '../cli-words.js';
import { agentExceptionOf, type JobData, type TaskView } from '../job/job-data.js';
import { renderTable } from '../table.js';
import type { Paint } from './ansi.js';
import { formatReward, printable } from './format.js';

/** Rows shown unless every task is asked for: a 5,000-task run's table belongs in report.html. */
export const TASK_ROWS = 50;

// The problems first: what did not score, then task failures, then the rest by id.
const ORDER: Record<string, number> = { infra_failed: 0, not_run: 1, task_failed: 2, rewarded: 3 };

function failureOf(task: TaskView): string {
  const { summary } = task;
  // A rewarded task whose agent timed out (verified anyway, as harbor does) says so here.
  const agent = summary.status === 'rewarded' ? agentExceptionOf(task) : undefined;
  const type = summary.failureType ?? agent?.exceptionType;
  if (!type) return '';
  const first = ((summary.failureType ? summary.failureMessage : agent?.exceptionMessage) ?? '').split('\n')[0] ?? '';
  // The task's failure is its chosen attempt's, else its last one's: the remedies that attempt's result.json names.
  const shown = summary.chosenAttempt ?? task.attempts.at(-1)?.attempt;
  const failed = summary.failureType ? task.attempts.find((a) => a.attempt === shown)?.result?.failure?.error : undefined;
  return printable(`${type}: ${cliWords(first, remediesOf(failed))}`);
}

/** One line per task: task, status, reward, attempts, and the failure's type and first line. */
export function taskTable(job: JobData, p: Paint, limit: number = TASK_ROWS): string[] {
  if (job.tasks.length === 0) return [];
  const sorted = [...job.tasks].sort(
    (a, b) => (ORDER[a.summary.status] ?? 9) - (ORDER[b.summary.status] ?? 9) || a.summary.taskId.localeCompare(b.summary.taskId),
  );
  const shown = sorted.slice(0, limit);
  const rows = shown.map((t) => {
    const s = t.summary;
    const status = s.status === 'not_run' ? `not_run (${s.notRunReason ?? 'deadline'})` : s.status;
    return [printable(s.taskId), status, s.reward === undefined ? '—' : formatReward(s.reward), String(s.attempts.length), failureOf(t)];
  });
  const lines = [p.bold('tasks'), ...renderTable(['TASK', 'STATUS', 'REWARD', 'ATTEMPTS', 'FAILURE'], rows).split('\n')];
  if (sorted.length > shown.length) lines.push(p.dim(`… and ${sorted.length - shown.length} more (--all-tasks lists every one; report.html has them all)`));
  return lines;
}
