import { ConfigError } from '../errors.js';
import type { JournalState } from './journal.js';
import type { AttemptFailure, AttemptRecord, JsonValue, RunResult } from './types.js';

/** Why the run stopped attempts: its deadline passed, or it was cancelled (by the caller or a failure of its own). */
export type StopReason = NonNullable<AttemptFailure['stoppedBy']>;

/** One task during a run: every attempt so far, in attempt order. */
export interface TaskState<T, O extends JsonValue> {
  task: T;
  id: string;
  attempts: AttemptRecord<O>[];
  /** Attempts that count against maxAttempts: those the run did not stop. */
  counted: number;
  done: boolean;
  stopReason?: StopReason;
}

function defaultTaskId(task: unknown): string {
  if (typeof task === 'string') return task;
  if (task && typeof task === 'object') {
    const record = task as { id?: unknown; name?: unknown };
    if (typeof record.id === 'string') return record.id;
    if (typeof record.name === 'string') return record.name;
  }
  throw new ConfigError({ operation: 'config', path: 'taskId', message: 'tasks need an id: pass strings, objects with an `id` or `name`, or options.taskId' });
}

/** A fresh state per task; refuses tasks without an id and ids given twice. */
export function taskStates<T, O extends JsonValue>(tasks: readonly T[], taskId: (task: T) => string = defaultTaskId): TaskState<T, O>[] {
  const states: TaskState<T, O>[] = tasks.map((task) => ({ task, id: taskId(task), attempts: [], counted: 0, done: false }));
  const seen = new Set<string>();
  for (const s of states) {
    if (seen.has(s.id)) throw new ConfigError({ operation: 'config', path: 'tasks', message: `task id "${s.id}" appears twice; ids must be unique` });
    seen.add(s.id);
  }
  return states;
}

/** Gives each task the attempts a journal settled before; returns what was reused. */
export function resumeTasks<T, O extends JsonValue>(states: readonly TaskState<T, O>[], journaled: JournalState): NonNullable<RunResult<O>['resume']> {
  let reused = 0;
  for (const s of states) {
    const previous = (journaled.attempts.get(s.id) ?? []) as AttemptRecord<O>[];
    s.attempts.push(...previous);
    s.counted = previous.filter((a) => !a.failure?.stoppedBy).length;
    reused += previous.length;
  }
  return { reusedAttempts: reused, interruptedAttempts: journaled.interrupted, changedTasks: journaled.changedTasks };
}
