import { setMaxListeners } from 'node:events';
import { EventEmitter } from 'eventemitter3';
import { classifyFailure, type ClassifiedFailure } from '../classify.js';
import { ConfigError, serializeError } from '../errors.js';
import { redactSecrets } from '../redact.js';
import { systemClock } from './clock.js';
import { RunJournal } from './journal.js';
import { buildRunReport } from './report.js';
import type {
  AttemptFailure,
  AttemptRecord,
  JsonValue,
  RunEvents,
  RunProgress,
  RunResult,
  RunTrialsOptions,
  TaskRecord,
  TrialFunction,
} from './types.js';

const DEFAULTS = { maxAttempts: 3, concurrency: 4, initialMs: 1000, maxMs: 60_000, multiplier: 2, jitter: 0.5 };
/** How long stopped attempts get to settle before the run gives up waiting on them. */
const STOP_GRACE_MS = 30_000;

type StopReason = 'deadline' | 'cancelled';

interface TaskState<T, O extends JsonValue> {
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

function positiveInt(value: number | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1) {
    throw new ConfigError({ operation: 'config', path: name, message: `${name} must be a whole number >= 1, got ${value}` });
  }
  return value;
}

const usable = (a: AttemptRecord): boolean => a.status === 'outcome' || a.failure?.category === 'task_failure';

/**
 * Run every task with bounded concurrency, retry attempts whose failures are worth retrying, and
 * merge attempts per task. Every attempt is kept; a task's chosen trial is its first usable
 * attempt (an outcome or a task failure) in attempt order: never the best reward, and a later
 * attempt never replaces an earlier usable one, because a task with a usable attempt is never
 * tried again. See DESIGN.md, "The retry controller".
 */
export async function runTrials<T, O extends JsonValue>(
  tasks: readonly T[],
  trial: TrialFunction<T, O>,
  options: RunTrialsOptions<T> = {},
): Promise<RunResult<O>> {
  const clock = options.clock ?? systemClock;
  const random = options.random ?? Math.random;
  const events = options.events ?? new EventEmitter<RunEvents>();
  const maxAttempts = positiveInt(options.maxAttempts, 'maxAttempts', DEFAULTS.maxAttempts);
  const concurrency = positiveInt(options.concurrency, 'concurrency', DEFAULTS.concurrency);
  const scoreField = options.scoreField ?? 'reward';
  const backoff = { ...DEFAULTS, ...options.backoff };
  if (options.deadlineMs !== undefined && !(options.deadlineMs > 0)) {
    throw new ConfigError({ operation: 'config', path: 'deadlineMs', message: `deadlineMs must be a positive number, got ${options.deadlineMs}` });
  }
  const retryOn = options.retryOn ?? ((f: ClassifiedFailure) => f.retryable);

  const idOf = options.taskId ?? defaultTaskId;
  const states: TaskState<T, O>[] = tasks.map((task) => ({ task, id: idOf(task), attempts: [], counted: 0, done: false }));
  const seen = new Set<string>();
  for (const s of states) {
    if (seen.has(s.id)) throw new ConfigError({ operation: 'config', path: 'tasks', message: `task id "${s.id}" appears twice; ids must be unique` });
    seen.add(s.id);
  }

  const startedAt = clock.now();
  let journal: RunJournal | undefined;
  let resume: RunResult<O>['resume'];
  if (options.journal) {
    const opened = RunJournal.open(options.journal, { taskIds: states.map((s) => s.id), maxAttempts, scoreField }, startedAt);
    journal = opened.journal;
    let reused = 0;
    for (const s of states) {
      const previous = (opened.state.attempts.get(s.id) ?? []) as AttemptRecord<O>[];
      s.attempts.push(...previous);
      s.counted = previous.filter((a) => !a.failure?.stoppedBy).length;
      reused += previous.length;
    }
    resume = { reusedAttempts: reused, interruptedAttempts: opened.state.interrupted };
  }

  // ------------------------------------------------------------------ the dispatcher
  const ready: TaskState<T, O>[] = [];
  const inflight = new Set<Promise<void>>();
  let finished = false;
  let delayed = 0;
  let running = 0;
  let wake: () => void = () => undefined;
  let changed = new Promise<void>((r) => (wake = r));
  const signalChange = () => {
    const w = wake;
    changed = new Promise<void>((r) => (wake = r));
    w();
  };

  // ------------------------------------------------------------------ stopping (deadline, cancel)
  const stopper = new AbortController();
  // One listener per attempt in flight: as many as `concurrency`, which is not a leak.
  setMaxListeners(0, stopper.signal);
  let stopReason: StopReason | undefined;
  const stop = (reason: StopReason) => {
    if (stopReason) return;
    stopReason = reason;
    stopper.abort(new DOMException(reason === 'deadline' ? 'the run reached its deadline' : 'the run was cancelled', 'AbortError'));
    signalChange();
  };
  const onCallerAbort = () => stop('cancelled');
  if (options.signal?.aborted) stop('cancelled');
  options.signal?.addEventListener('abort', onCallerAbort, { once: true });
  const watchers = new AbortController();
  if (options.deadlineMs !== undefined) {
    clock.sleep(options.deadlineMs, watchers.signal).then(
      () => stop('deadline'),
      () => undefined,
    );
  }

  // ------------------------------------------------------------------ decisions per task
  const failureOf = (error: unknown, attemptSignal: AbortSignal): AttemptFailure => {
    const classified = classifyFailure(error);
    const failure: AttemptFailure = {
      category: classified.category,
      type: classified.type,
      // Journals and reports leave the process: no secret may ride along in a message.
      message: redactSecrets(classified.message),
      unclassified: classified.unclassified,
      retryable: classified.retryable,
      error: serializeError(error),
    };
    if (classified.retryAfterMs !== undefined) failure.retryAfterMs = classified.retryAfterMs;
    // The run stopped this attempt; whatever it threw on the way out is not its own failure.
    // A task failure is still the task's verdict and stays usable.
    if (attemptSignal.aborted && stopReason && classified.category !== 'task_failure') {
      failure.stoppedBy = stopReason;
      failure.category = 'cancelled';
      failure.retryable = false;
    }
    return failure;
  };

  const settle = (s: TaskState<T, O>, reason?: StopReason) => {
    if (s.done) return;
    s.done = true;
    if (reason && !s.attempts.some(usable)) s.stopReason = reason;
    const status = statusOf(s);
    counts.settled++;
    if (status === 'scored') counts.scored++;
    else if (status === 'infra_failed') counts.infraFailed++;
    else counts.notRun++;
    if (events.listenerCount('task:settled') > 0) events.emit('task:settled', toTaskRecord(s));
  };

  /** After an attempt: settled, or the delay before the next try. */
  const nextStep = (s: TaskState<T, O>): { retryInMs: number } | undefined => {
    if (s.attempts.some(usable)) return undefined;
    const last = s.attempts[s.attempts.length - 1];
    if (!last?.failure) return undefined;
    if (last.failure.stoppedBy) return undefined;
    if (s.counted >= maxAttempts) return undefined;
    const classified: ClassifiedFailure & { attempt: number; taskId: string } = {
      category: last.failure.category,
      type: last.failure.type,
      message: last.failure.message,
      unclassified: last.failure.unclassified,
      retryable: last.failure.retryable,
      attempt: last.attempt,
      taskId: s.id,
    };
    if (last.failure.retryAfterMs !== undefined) classified.retryAfterMs = last.failure.retryAfterMs;
    if (!retryOn(classified)) return undefined;
    const base = Math.min(backoff.maxMs, backoff.initialMs * Math.pow(backoff.multiplier, Math.max(0, s.counted - 1)));
    const jittered = base * (1 - backoff.jitter * random());
    return { retryInMs: Math.round(Math.max(jittered, last.failure.retryAfterMs ?? 0)) };
  };

  // Kept incrementally: recounting every task per attempt would make a run quadratic.
  const counts: RunProgress = { total: states.length, settled: 0, scored: 0, infraFailed: 0, notRun: 0, running: 0, attempts: 0 };
  for (const s of states) counts.attempts += s.attempts.length;
  const progress = (): RunProgress => ({ ...counts, running });

  const schedule = (s: TaskState<T, O>) => {
    const step = nextStep(s);
    // Decided: usable, or no retry left or worth it. Only an attempt the run itself stopped makes
    // the task "not run"; a permanent failure stays one even if the deadline passed meanwhile.
    if (!step) return settle(s, s.attempts[s.attempts.length - 1]?.failure?.stoppedBy);
    // A retry was due but the run is stopping: the task did not get its chance.
    if (stopReason) return settle(s, stopReason);
    const next = s.attempts.length + 1;
    const last = s.attempts[s.attempts.length - 1]!;
    events.emit('retry:scheduled', { taskId: s.id, attempt: next, delayMs: step.retryInMs, failure: last.failure! });
    delayed++;
    clock.sleep(step.retryInMs, stopper.signal).then(
      () => {
        delayed--;
        ready.push(s);
        signalChange();
      },
      () => {
        delayed--;
        settle(s, stopReason ?? 'cancelled');
        signalChange();
      },
    );
  };

  // A failure of the run's own bookkeeping (a listener that throws, a journal that cannot be
  // written): the run cannot keep its promises, so it stops and runTrials rejects with it.
  let fatal: { error: unknown } | undefined;
  const failRun = (error: unknown) => {
    fatal ??= { error };
    stop('cancelled');
  };

  const runAttempt = async (s: TaskState<T, O>): Promise<void> => {
    try {
      await attemptOnce(s);
    } catch (error) {
      failRun(error);
    }
  };

  const attemptOnce = async (s: TaskState<T, O>): Promise<void> => {
    const attempt = (s.attempts[s.attempts.length - 1]?.attempt ?? 0) + 1;
    const attemptController = new AbortController();
    const onStop = () => attemptController.abort(stopper.signal.reason);
    stopper.signal.addEventListener('abort', onStop, { once: true });
    const t0 = clock.now();
    journal?.started(s.id, attempt, t0);
    events.emit('attempt:start', { taskId: s.id, attempt });
    let record: AttemptRecord<O>;
    try {
      const outcome = await trial(s.task, { attempt, signal: attemptController.signal, events, taskId: s.id });
      const t1 = clock.now();
      record = { taskId: s.id, attempt, startedAt: t0, endedAt: t1, durationMs: t1 - t0, status: 'outcome', outcome };
    } catch (error) {
      const t1 = clock.now();
      record = { taskId: s.id, attempt, startedAt: t0, endedAt: t1, durationMs: t1 - t0, status: 'failed', failure: failureOf(error, attemptController.signal) };
    } finally {
      stopper.signal.removeEventListener('abort', onStop);
    }
    // The run gave up waiting on this attempt (past the stop grace period) and has reported.
    if (finished) return;
    s.attempts.push(record);
    counts.attempts++;
    if (!record.failure?.stoppedBy) s.counted++;
    journal?.settled(record);
    events.emit('attempt:end', record as AttemptRecord);
    schedule(s);
    if (events.listenerCount('run:progress') > 0) events.emit('run:progress', progress());
  };

  try {
    for (const s of states) {
      const last = s.attempts[s.attempts.length - 1];
      if (!last) ready.push(s);
      else if (s.attempts.some(usable)) settle(s);
      // Resumed: an attempt the last run stopped is tried again; a retry that was due runs now.
      else if (last.failure?.stoppedBy ? s.counted < maxAttempts : nextStep(s) !== undefined) ready.push(s);
      else settle(s);
    }
    for (;;) {
      while (!stopReason && running < concurrency && ready.length > 0) {
        const s = ready.shift()!;
        running++;
        const p: Promise<void> = runAttempt(s).finally(() => {
          running--;
          inflight.delete(p);
          signalChange();
        });
        inflight.add(p);
      }
      if (stopReason) {
        for (const s of ready.splice(0)) settle(s, stopReason);
        if (inflight.size > 0) {
          // Attempts were told to stop; give them a bounded time to settle and record themselves.
          const grace = new AbortController();
          await Promise.race([Promise.allSettled([...inflight]), clock.sleep(STOP_GRACE_MS, grace.signal).catch(() => undefined)]);
          grace.abort();
        }
        if (delayed === 0 || inflight.size > 0) break;
      }
      if (inflight.size === 0 && delayed === 0 && ready.length === 0) break;
      await changed;
    }
  } finally {
    finished = true;
    watchers.abort();
    options.signal?.removeEventListener('abort', onCallerAbort);
    journal?.close();
  }

  if (fatal) throw fatal.error;
  // Anything still open (abandoned attempts past the grace period, or never started) ends here.
  for (const s of states) settle(s, stopReason ?? 'cancelled');
  const records = states.map(toTaskRecord);
  const report = buildRunReport(records, { scoreField, validity: options.validity ?? {}, durationMs: clock.now() - startedAt });
  events.emit('run:end', report);
  const result: RunResult<O> = { report, tasks: records };
  if (resume) result.resume = resume;
  return result;
}

function statusOf<T, O extends JsonValue>(s: TaskState<T, O>): TaskRecord['status'] {
  if (s.attempts.some(usable)) return 'scored';
  if (s.stopReason) return 'not_run';
  const last = s.attempts[s.attempts.length - 1];
  if (!last) return 'not_run';
  // A trial that cancelled itself was not run to an end either.
  if (last.failure?.category === 'cancelled') return 'not_run';
  return 'infra_failed';
}

function toTaskRecord<T, O extends JsonValue>(s: TaskState<T, O>): TaskRecord<O> {
  const status = statusOf(s);
  const record: TaskRecord<O> = { taskId: s.id, status, attempts: [...s.attempts] };
  if (status === 'scored') {
    const chosen = s.attempts.find(usable)!;
    record.chosenAttempt = chosen.attempt;
    if (chosen.status === 'outcome') record.outcome = chosen.outcome as O;
    else record.failure = chosen.failure!;
  } else {
    const last = s.attempts[s.attempts.length - 1];
    if (last?.failure) record.failure = last.failure;
    if (status === 'not_run') record.notRunReason = s.stopReason ?? 'cancelled';
  }
  return record;
}
