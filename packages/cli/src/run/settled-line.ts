import type { AttemptFailure, RunProgress, TaskRecord } from '@berth/core';
import { formatDuration } from '../duration.js';

/** What became of a task, in the words report.json uses. */
export function taskVerdict(record: TaskRecord): string {
  if (record.status === 'scored') {
    if (record.failure) return `task_failed (${record.failure.type})`;
    const outcome = record.outcome;
    const reward = outcome !== null && typeof outcome === 'object' && !Array.isArray(outcome) ? outcome.reward : undefined;
    return `rewarded ${typeof reward === 'number' ? reward : '?'}`;
  }
  if (record.status === 'not_run') return `not_run (${record.notRunReason ?? 'cancelled'})`;
  return `infra_failed: ${describeFailure(record.failure)}`;
}

/** 'permanent_infra ImagePullError: <first line of the message>' */
export function describeFailure(failure: Pick<AttemptFailure, 'category' | 'type' | 'message'> | undefined, width = 160): string {
  if (!failure) return 'unknown';
  const first = failure.message.split('\n')[0] ?? '';
  return clip(`${failure.category} ${failure.type}: ${first}`, width);
}

export function clip(text: string, width: number): string {
  return text.length <= width ? text : `${text.slice(0, Math.max(0, width - 1))}…`;
}

/** One line per settled task, for logs: `[ 12/300] task-id  rewarded 1  (attempt 1 of 1, 3.2s)`. */
export function settledLine(record: TaskRecord, progress: Pick<RunProgress, 'settled' | 'total'>): string {
  const width = String(progress.total).length;
  const last = record.attempts.at(-1);
  const shown = record.chosenAttempt ?? last?.attempt;
  const took = record.attempts.reduce((sum, a) => sum + a.durationMs, 0);
  const where = shown === undefined ? 'no attempt' : `attempt ${shown} of ${record.attempts.length}, ${formatDuration(took)}`;
  return `[${String(progress.settled).padStart(width)}/${progress.total}] ${record.taskId}  ${taskVerdict(record)}  (${where})`;
}
