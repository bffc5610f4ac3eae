import type { AttemptFailure, RunProgress, TaskRecord } from '@berth/core';
import { cliWords, remediesOf } from '../cli-words.js';
import { formatDuration } from '../duration.js';

/** What became of a task, in the words report.json uses. */
export function taskVerdict(record: TaskRecord): string {
  if (record.status === 'scored') {
    if (record.failure) return `task_failed (${record.failure.type})`;
    const outcome = record.outcome;
    const fields = outcome !== null && typeof outcome === 'object' && !Array.isArray(outcome) ? outcome : {};
    const reward = fields.reward;
    // harbor's exception_info: the agent timed out (or exited non-zero) and was verified anyway.
    const info = fields.exceptionInfo;
    const type = info !== null && typeof info === 'object' && !Array.isArray(info) ? info.exceptionType : undefined;
    return `rewarded ${typeof reward === 'number' ? reward : '?'}${typeof type === 'string' ? ` (${type})` : ''}${stepsText(fields.steps)}`;
  }
  if (record.status === 'not_run') return `not_run (${record.notRunReason ?? 'cancelled'})`;
  return `infra_failed: ${describeFailure(record.failure)}`;
}

/**
 * A multi-step task's steps, as its outcome lists them: ` [scaffold 1, implement 0.5 AgentTimeoutError,
 * document skipped]` (a step with no reward shows what went wrong in it).
 */
function stepsText(steps: unknown): string {
  if (!Array.isArray(steps) || steps.length === 0) return '';
  const shown = steps.map((step) => {
    const { name, reward, exceptionType, skipped } = (step ?? {}) as Record<string, unknown>;
    const parts = [
      String(name),
      skipped === true ? 'skipped' : typeof reward === 'number' ? String(reward) : '',
      typeof exceptionType === 'string' ? exceptionType : '',
    ];
    return parts.filter(Boolean).join(' ');
  });
  return ` [${shown.join(', ')}]`;
}

/** 'permanent_infra ImagePullError: <first line of the message>' */
export function describeFailure(
  failure: (Pick<AttemptFailure, 'category' | 'type' | 'message'> & Partial<Pick<AttemptFailure, 'error'>>) | undefined,
  width = Infinity,
): string {
  if (!failure) return 'unknown';
  const first = cliWords(failure.message.split('\n')[0] ?? '', remediesOf(failure.error));
  return clip(`${failure.category} ${failure.type}: ${first}`, width);
}

function ordinal(n: number): string {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13 ? 'th' : (['th', 'st', 'nd', 'rd'][n % 10] ?? 'th');
  return `${n}${suffix}`;
}

/**
 * Fit a line into `width` characters by cutting its middle: a berth message ends with what to do
 * ("...; pass options.builder"), so the tail is kept.
 */
export function clip(text: string, width: number): string {
  if (text.length <= width) return text;
  if (width < 20) return `${text.slice(0, Math.max(0, width - 1))}…`;
  // The whole last clause ("; give --x") when it fits in 60 % of the line, else the last 45 %.
  const clause = text.length - text.lastIndexOf('; ') - 2;
  const tail = clause < text.length && clause <= Math.floor((width - 1) * 0.6) ? clause : Math.floor((width - 1) * 0.45);
  return `${text.slice(0, width - 1 - tail)}…${text.slice(text.length - tail)}`;
}

/**
 * One line per settled task, for logs: `[ 12/300] task-id  rewarded 1  (1 attempt, 3.2 s)`, or
 * `(2 attempts, the 2nd chosen, 9.1 s)` after a retry. ("attempt 1 of 1" read like a limit of one.)
 */
export function settledLine(record: TaskRecord, progress: Pick<RunProgress, 'settled' | 'total'>): string {
  const width = String(progress.total).length;
  const last = record.attempts.at(-1);
  const shown = record.chosenAttempt ?? last?.attempt;
  const took = record.attempts.reduce((sum, a) => sum + a.durationMs, 0);
  const n = record.attempts.length;
  const chosen = record.chosenAttempt !== undefined && n > 1 ? `, the ${ordinal(record.chosenAttempt)} chosen` : '';
  const where = shown === undefined ? 'no attempt' : `${n} attempt${n === 1 ? '' : 's'}${chosen}, ${formatDuration(took)}`;
  return `[${String(progress.settled).padStart(width)}/${progress.total}] ${record.taskId}  ${taskVerdict(record)}  (${where})`;
}
