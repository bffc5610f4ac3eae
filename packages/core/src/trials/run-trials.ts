import { createEvents } from '../events.js';
import { ConfigError } from '../errors.js';
import { resolveBackoff } from '../time/backoff.js';
import { systemClock } from '../time/clock.js';
import { defaultRetryOn } from './decision.js';
import { RunJournal } from './journal.js';
import { buildRunReport } from './report.js';
import { resumeTasks, taskStates } from './task-state.js';
import { TrialRun } from './trial-run.js';
import type { JsonValue, RunEvents, RunResult, RunTrialsOptions, TrialFunction } from './types.js';

const DEFAULTS = { maxAttempts: 3, concurrency: 4 };

function positiveInt(value: number | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1) {
    throw new ConfigError({ operation: 'config', path: name, message: `${name} must be a whole number >= 1, got ${value}` });
  }
  return value;
}

/**
 * Run every task with bounded concurrency, retry attempts whose failures are worth retrying, and
 * merge attempts per task. Every attempt is kept; a task's chosen trial is its first usable
 * attempt (an outcome or a task failure) in attempt order: never the best reward, and a later
 * attempt never replaces an earlier usable one, because a task with a usable attempt is never
 * tried again. See the README's retry controller section.
 */
export async function runTrials<T, O extends JsonValue>(
  tasks: readonly T[],
  trial: TrialFunction<T, O>,
  options: RunTrialsOptions<T> = {},
): Promise<RunResult<O>> {
  const clock = options.clock ?? systemClock;
  const events = options.events ?? createEvents<RunEvents>();
  const maxAttempts = positiveInt(options.maxAttempts, 'maxAttempts', DEFAULTS.maxAttempts);
  const concurrency = positiveInt(options.concurrency, 'concurrency', DEFAULTS.concurrency);
  const scoreField = options.scoreField ?? 'reward';
  for (const key of ['initialMs', 'maxMs'] as const) {
    const value = options.outagePause ? options.outagePause[key] : undefined;
    if (value !== undefined && !(value >= 0)) {
      throw new ConfigError({
        operation: 'config',
        path: `outagePause.${key}`,
        message: `outagePause.${key} must be a number of milliseconds >= 0, got ${value}`,
      });
    }
  }
  if (options.deadlineMs !== undefined && !(options.deadlineMs > 0)) {
    throw new ConfigError({ operation: 'config', path: 'deadlineMs', message: `deadlineMs must be a positive number, got ${options.deadlineMs}` });
  }
  const policy = {
    maxAttempts,
    retryOn: options.retryOn ?? defaultRetryOn,
    backoff: resolveBackoff(options.backoff),
    random: options.random ?? Math.random,
  };
  const states = taskStates<T, O>(tasks, options.taskId);

  const startedAt = clock.now();
  let journal: RunJournal | undefined;
  let resume: RunResult<O>['resume'];
  let priorDurationMs = 0;
  if (options.journal) {
    const identity = { taskIds: states.map((s) => s.id), maxAttempts, scoreField, ...(options.runIdentity ? { identity: options.runIdentity } : {}) };
    const taskVersions = options.taskVersion ? new Map(states.map((s) => [s.id, options.taskVersion!(s.task)])) : undefined;
    const opened = RunJournal.open(options.journal, identity, startedAt, {
      ...(taskVersions ? { taskVersions } : {}),
      ...(options.fresh ? { fresh: true } : {}),
    });
    journal = opened.journal;
    resume = resumeTasks(states, opened.state);
    priorDurationMs = opened.state.priorDurationMs;
  }

  const run = new TrialRun(states, trial, {
    clock,
    events,
    concurrency,
    policy,
    deadlineMs: options.deadlineMs,
    signal: options.signal,
    journal,
    outagePause: options.outagePause,
  });
  const records = await run.run();
  const report = buildRunReport(records, { scoreField, validity: options.validity ?? {}, durationMs: priorDurationMs + clock.now() - startedAt });
  events.emit('run:end', report);
  const result: RunResult<O> = { report, tasks: records };
  if (resume) result.resume = resume;
  return result;
}
