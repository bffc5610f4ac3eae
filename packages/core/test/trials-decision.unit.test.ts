import { describe, expect, it } from 'vitest';
import { ImagePullError, SandboxLostError, TaskFailure } from '../src/errors.js';
import { attemptFailure } from '../src/trials/attempt-failure.js';
import {
  defaultRetryOn,
  nextStep,
  startStep,
  taskRecord,
  taskStatus,
  usable,
  type RetryOn,
  type RetryPolicy,
  type TaskHistory,
} from '../src/trials/decision.js';
import type { AttemptFailure, AttemptRecord } from '../src/trials/types.js';

// ------------------------------------------------------------------ attempts as a run records them

type Kind = 'transient' | 'permanent' | 'unclassified' | 'task_failure' | 'cancelled';

const FAILURES: Record<Kind, Omit<AttemptFailure, 'error'>> = {
  transient: { category: 'transient_infra', type: 'SandboxLost', message: 'gone', unclassified: false, retryable: true },
  permanent: { category: 'permanent_infra', type: 'ImagePull', message: 'unauthorized', unclassified: false, retryable: false },
  unclassified: { category: 'unclassified', type: 'TypeError', message: 'weird', unclassified: true, retryable: false },
  task_failure: { category: 'task_failure', type: 'VerifierFailed', message: 'tests failed', unclassified: false, retryable: false },
  cancelled: { category: 'cancelled', type: 'AbortError', message: 'aborted', unclassified: false, retryable: false },
};

function outcome(attempt: number, reward: number): AttemptRecord {
  return { taskId: 't', attempt, startedAt: 0, endedAt: 1, durationMs: 1, status: 'outcome', outcome: { reward } };
}

function failed(attempt: number, kind: Kind, extra: Partial<AttemptFailure> = {}): AttemptRecord {
  const failure: AttemptFailure = { ...FAILURES[kind], error: { name: 'Error', message: FAILURES[kind].message }, ...extra };
  return { taskId: 't', attempt, startedAt: 0, endedAt: 1, durationMs: 1, status: 'failed', failure };
}

/** A task's history; `counted` defaults to the attempts the run did not stop. */
function task(attempts: AttemptRecord[], extra: Partial<TaskHistory> = {}): TaskHistory {
  return { id: 't', attempts, counted: attempts.filter((a) => !a.failure?.stoppedBy).length, ...extra };
}

/** A policy whose randomness is counted: a decision to settle must not draw. */
function policy(overrides: Partial<RetryPolicy> = {}): RetryPolicy & { draws: () => number } {
  let draws = 0;
  return {
    maxAttempts: 3,
    retryOn: defaultRetryOn,
    backoff: { initialMs: 100, maxMs: 10_000, multiplier: 2, jitter: 0.5 },
    random: () => (draws++, 0.5),
    ...overrides,
    draws: () => draws,
  };
}

// ------------------------------------------------------------------ the rules

describe('usable', () => {
  it('is an outcome or a task failure, nothing else', () => {
    expect(usable(outcome(1, 0))).toBe(true);
    expect(usable(failed(1, 'task_failure'))).toBe(true);
    for (const kind of ['transient', 'permanent', 'unclassified', 'cancelled'] as const) expect(usable(failed(1, kind))).toBe(false);
  });
});

describe('taskRecord: the chosen trial', () => {
  it('is the first usable attempt, never the best reward', () => {
    const record = taskRecord(task([failed(1, 'transient'), outcome(2, 0), outcome(3, 1)]));
    expect(record).toMatchObject({ taskId: 't', status: 'scored', chosenAttempt: 2, outcome: { reward: 0 } });
    expect(record.failure).toBeUndefined();
    expect(record.attempts).toHaveLength(3);
  });

  it('is a task failure when that came first, with its failure and no outcome', () => {
    const record = taskRecord(task([failed(1, 'task_failure'), outcome(2, 1)]));
    expect(record).toMatchObject({ status: 'scored', chosenAttempt: 1, failure: { category: 'task_failure' } });
    expect(record.outcome).toBeUndefined();
  });

  it('reports the last failure when nothing was usable, and why a task did not run', () => {
    expect(taskRecord(task([failed(1, 'transient'), failed(2, 'permanent')]))).toMatchObject({
      status: 'infra_failed',
      failure: { category: 'permanent_infra' },
    });
    const stopped = taskRecord(task([failed(1, 'cancelled', { stoppedBy: 'deadline' })], { stopReason: 'deadline' }));
    expect(stopped).toMatchObject({ status: 'not_run', notRunReason: 'deadline', failure: { stoppedBy: 'deadline' } });
    expect(taskRecord(task([]))).toEqual({ taskId: 't', status: 'not_run', notRunReason: 'cancelled', attempts: [] });
  });

  it('copies the attempts, so the record does not change with the task', () => {
    const attempts = [outcome(1, 1)];
    const record = taskRecord(task(attempts));
    attempts.push(outcome(2, 0));
    expect(record.attempts).toHaveLength(1);
  });
});

describe('taskStatus', () => {
  it('scored when any attempt is usable, even if the run stopped afterwards', () => {
    expect(taskStatus(task([outcome(1, 0)]))).toBe('scored');
    expect(taskStatus(task([failed(1, 'transient'), failed(2, 'task_failure')], { stopReason: 'cancelled' }))).toBe('scored');
  });

  it('not_run when the run stopped the task, it never ran, or it cancelled itself', () => {
    expect(taskStatus(task([failed(1, 'transient')], { stopReason: 'deadline' }))).toBe('not_run');
    expect(taskStatus(task([]))).toBe('not_run');
    expect(taskStatus(task([failed(1, 'transient'), failed(2, 'cancelled')]))).toBe('not_run');
  });

  it('infra_failed when every attempt failed on infrastructure', () => {
    for (const kind of ['transient', 'permanent', 'unclassified'] as const)
      expect(taskStatus(task([failed(1, 'transient'), failed(2, kind)]))).toBe('infra_failed');
  });
});

describe('nextStep', () => {
  it('never retries a task with a usable attempt, whatever retryOn says', () => {
    let asked = 0;
    const p = policy({ retryOn: () => (asked++, true) });
    expect(nextStep(task([outcome(1, 0)]), p)).toEqual({ action: 'settle' });
    expect(nextStep(task([failed(1, 'task_failure')]), p)).toEqual({ action: 'settle' });
    expect(nextStep(task([failed(1, 'transient'), outcome(2, 0)]), p)).toEqual({ action: 'settle' });
    expect(asked).toBe(0);
    expect(p.draws()).toBe(0);
  });

  it('does not retry a permanent or unclassified failure by default', () => {
    const p = policy();
    expect(nextStep(task([failed(1, 'permanent')]), p)).toEqual({ action: 'settle' });
    expect(nextStep(task([failed(1, 'unclassified')]), p)).toEqual({ action: 'settle' });
    expect(p.draws()).toBe(0);
  });

  it('retries a transient failure after the backoff, drawing its jitter once', () => {
    const p = policy();
    expect(nextStep(task([failed(1, 'transient')]), p)).toEqual({ action: 'retry', delayMs: 75 });
    expect(nextStep(task([failed(1, 'transient'), failed(2, 'transient')]), p)).toEqual({ action: 'retry', delayMs: 150 });
    expect(p.draws()).toBe(2);
  });

  it('waits at least the failure’s retryAfterMs', () => {
    expect(nextStep(task([failed(1, 'transient', { retryAfterMs: 4000 })]), policy())).toEqual({ action: 'retry', delayMs: 4000 });
  });

  it('asks retryOn about the last failure, and does what it says', () => {
    const asked: Parameters<RetryOn>[0][] = [];
    const retryUnclassified: RetryOn = (f) => (asked.push(f), f.unclassified);
    expect(nextStep(task([failed(1, 'transient'), failed(2, 'unclassified')]), policy({ retryOn: retryUnclassified }))).toMatchObject({ action: 'retry' });
    expect(nextStep(task([failed(1, 'transient', { retryAfterMs: 9 })]), policy({ retryOn: retryUnclassified }))).toEqual({ action: 'settle' });
    // The classification, the attempt and the task: not the serialised error or run bookkeeping.
    expect(asked).toEqual([
      { category: 'unclassified', type: 'TypeError', message: 'weird', unclassified: true, retryable: false, attempt: 2, taskId: 't' },
      { category: 'transient_infra', type: 'SandboxLost', message: 'gone', unclassified: false, retryable: true, attempt: 1, taskId: 't', retryAfterMs: 9 },
    ]);
  });

  it('stops at maxAttempts counted attempts', () => {
    const twice = [failed(1, 'transient'), failed(2, 'transient')];
    expect(nextStep(task(twice), policy({ maxAttempts: 2 }))).toEqual({ action: 'settle' });
    expect(nextStep(task(twice), policy({ maxAttempts: 3 }))).toMatchObject({ action: 'retry' });
    expect(nextStep(task([failed(1, 'transient')]), policy({ maxAttempts: 1 }))).toEqual({ action: 'settle' });
    // Only counted attempts use up the budget: the run's own stops do not.
    expect(nextStep(task(twice, { counted: 1 }), policy({ maxAttempts: 2 }))).toMatchObject({ action: 'retry' });
  });

  it('does not retry an attempt the run stopped, even if retryOn would', () => {
    const p = policy({ retryOn: () => true });
    expect(nextStep(task([failed(1, 'cancelled', { stoppedBy: 'deadline' })]), p)).toEqual({ action: 'settle' });
    expect(nextStep(task([failed(1, 'transient'), failed(2, 'cancelled', { stoppedBy: 'cancelled' })]), p)).toEqual({ action: 'settle' });
    expect(p.draws()).toBe(0);
  });

  it('settles a task with no failed attempt to go on', () => {
    expect(nextStep(task([]), policy())).toEqual({ action: 'settle' });
  });
});

describe('startStep (resuming from a journal)', () => {
  it('runs a fresh task and settles a task with a usable attempt', () => {
    expect(startStep(task([]), policy())).toBe('run');
    expect(startStep(task([failed(1, 'transient'), outcome(2, 1)]), policy())).toBe('settle');
  });

  it('runs again an attempt the last run stopped, while the budget lasts', () => {
    const stopped = [failed(1, 'transient'), failed(2, 'cancelled', { stoppedBy: 'cancelled' })];
    expect(startStep(task(stopped), policy({ maxAttempts: 2 }))).toBe('run');
    expect(startStep(task(stopped), policy({ maxAttempts: 1 }))).toBe('settle');
  });

  it('runs a retry that was due now, and settles what needs none', () => {
    const p = policy();
    expect(startStep(task([failed(1, 'transient')]), p)).toBe('run');
    expect(startStep(task([failed(1, 'permanent')]), p)).toBe('settle');
    expect(startStep(task([failed(1, 'transient'), failed(2, 'transient'), failed(3, 'transient')]), p)).toBe('settle');
    // The due retry decided with the same rule as in a run, jitter draw included.
    expect(p.draws()).toBe(1);
  });
});

describe('attemptFailure', () => {
  it('records the classification and the whole error, secrets redacted', () => {
    const failure = attemptFailure(
      new ImagePullError({ message: 'slow down, token=ghp_abcdefghijklmnopqrstuvwxyz0123456789', image: 'x', reason: 'rate_limited', retryAfterMs: 5000 }),
      undefined,
    );
    expect(failure).toMatchObject({ category: 'transient_infra', retryable: true, retryAfterMs: 5000, error: { name: 'ImagePullError' } });
    // Nowhere in what journals and reports keep, and the serialised error says where it was cut out.
    expect(JSON.stringify(failure)).not.toContain('ghp_abcdefghijklmnopqrstuvwxyz0123456789');
    expect(failure.error.message).toContain('[REDACTED]');
    expect(failure.error.message).toContain('slow down');
    expect(failure.stoppedBy).toBeUndefined();
  });

  it('marks what a stopped attempt threw as cancelled by the run, not its own failure', () => {
    expect(attemptFailure(new SandboxLostError({ message: 'gone' }), 'deadline')).toMatchObject({
      category: 'cancelled',
      retryable: false,
      stoppedBy: 'deadline',
      type: 'SandboxLostError',
    });
  });

  it('keeps a task failure as the task’s verdict, stopped or not', () => {
    const failure = attemptFailure(new TaskFailure({ message: 'tests failed', kind: 'VerifierFailed' }), 'cancelled');
    expect(failure).toMatchObject({ category: 'task_failure', type: 'VerifierFailed' });
    expect(failure.stoppedBy).toBeUndefined();
  });
});
