import type { ClassifiedFailure } from '../classify.js';
import { retryDelayMs, type Backoff } from '../time/backoff.js';
import type { StopReason } from './task-state.js';
import type { AttemptRecord, JsonValue, RunTrialsOptions, TaskRecord, TaskStatus } from './types.js';

// What happens to a task, decided from its attempts alone: pure functions, so each rule can be
// read and tested without running anything.

export type RetryOn = NonNullable<RunTrialsOptions<unknown>['retryOn']>;

/** Retry what the classification calls retryable: transient infrastructure. */
export const defaultRetryOn: RetryOn = (f) => f.retryable;

export interface RetryPolicy {
  maxAttempts: number;
  retryOn: RetryOn;
  backoff: Backoff;
  /** Jitter's randomness: drawn once per retry decided, and only then. */
  random: () => number;
}

/** What the decisions read of a task. */
export interface TaskHistory<O extends JsonValue = JsonValue> {
  readonly id: string;
  /** In attempt order. */
  readonly attempts: readonly AttemptRecord<O>[];
  /** Attempts that count against maxAttempts: those the run did not stop. */
  readonly counted: number;
  /** Set when the run stopped before the task had a usable attempt. */
  readonly stopReason?: StopReason;
}

export type NextStep = { readonly action: 'settle' } | { readonly action: 'retry'; readonly delayMs: number };

const SETTLE: NextStep = { action: 'settle' };

/** An outcome, or a task failure (the sandbox worked and the task failed): either is the task's verdict. */
export const usable = (a: AttemptRecord): boolean => a.status === 'outcome' || a.failure?.category === 'task_failure';

/** The question `retryOn` is asked about a failed attempt. */
function retryQuestion(taskId: string, attempt: number, failure: ClassifiedFailure): Parameters<RetryOn>[0] {
  const question: Parameters<RetryOn>[0] = {
    category: failure.category,
    type: failure.type,
    message: failure.message,
    unclassified: failure.unclassified,
    retryable: failure.retryable,
    attempt,
    taskId,
  };
  if (failure.retryAfterMs !== undefined) question.retryAfterMs = failure.retryAfterMs;
  return question;
}

/**
 * After an attempt: settle the task, or retry it after a delay. A task with a usable attempt is
 * never tried again, so a later attempt can never replace the chosen one. An attempt the run
 * stopped is not the task's failure, and the run that stopped it does not try again.
 */
export function nextStep<O extends JsonValue>(task: TaskHistory<O>, policy: RetryPolicy): NextStep {
  if (task.attempts.some(usable)) return SETTLE;
  const last = task.attempts.at(-1);
  if (!last?.failure) return SETTLE;
  if (last.failure.stoppedBy) return SETTLE;
  if (task.counted >= policy.maxAttempts) return SETTLE;
  // Plain calls: the caller's functions never see `policy` as `this`.
  const { retryOn, random } = policy;
  if (!retryOn(retryQuestion(task.id, last.attempt, last.failure))) return SETTLE;
  return { action: 'retry', delayMs: retryDelayMs(task.counted, policy.backoff, random, last.failure.retryAfterMs) };
}

/** Where a task starts a run, given the attempts a journal brought back (none for a fresh run). */
export function startStep<O extends JsonValue>(task: TaskHistory<O>, policy: RetryPolicy): 'run' | 'settle' {
  const last = task.attempts.at(-1);
  if (!last) return 'run';
  if (task.attempts.some(usable)) return 'settle';
  // Resumed: an attempt the last run stopped is tried again; a retry that was due runs now.
  if (last.failure?.stoppedBy ? task.counted < policy.maxAttempts : nextStep(task, policy).action === 'retry') return 'run';
  return 'settle';
}

export function taskStatus(task: TaskHistory): TaskStatus {
  if (task.attempts.some(usable)) return 'scored';
  if (task.stopReason) return 'not_run';
  const last = task.attempts.at(-1);
  if (!last) return 'not_run';
  // A trial that cancelled itself was not run to an end either.
  if (last.failure?.category === 'cancelled') return 'not_run';
  return 'infra_failed';
}

/** The task as reported: its chosen trial is its first usable attempt, never the best reward. */
export function taskRecord<O extends JsonValue>(task: TaskHistory<O>): TaskRecord<O> {
  const status = taskStatus(task);
  const record: TaskRecord<O> = { taskId: task.id, status, attempts: [...task.attempts] };
  if (status === 'scored') {
    const chosen = task.attempts.find(usable)!;
    record.chosenAttempt = chosen.attempt;
    if (chosen.status === 'outcome') record.outcome = chosen.outcome as O;
    else record.failure = chosen.failure!;
  } else {
    const last = task.attempts.at(-1);
    if (last?.failure) record.failure = last.failure;
    if (status === 'not_run') record.notRunReason = task.stopReason ?? 'cancelled';
  }
  return record;
}
