import { setMaxListeners } from 'node:events';
import type { TypedEvents } from '../events.js';
import { linkSignals } from '../abort.js';
import { attemptFailure } from './attempt-failure.js';
import { nextStep, startStep, taskRecord, taskStatus, usable, type RetryPolicy } from './decision.js';
import type { RunJournal } from './journal.js';
import { OutageGate } from './outage-gate.js';
import { SandboxTracker } from './sandbox-tracker.js';
import type { StopReason, TaskState } from './task-state.js';
import type { AttemptRecord, Clock, JsonValue, OutagePauseOptions, RunEvents, RunProgress, TaskRecord, TrialFunction } from './types.js';

/** How long stopped attempts get to settle before the run gives up waiting on them. */
const STOP_GRACE_MS = 30_000;

export interface TrialRunConfig {
  clock: Clock;
  events: TypedEvents<RunEvents>;
  concurrency: number;
  policy: RetryPolicy;
  deadlineMs?: number | undefined;
  signal?: AbortSignal | undefined;
  /** Already opened, and the tasks' states resumed from it; the run closes it. */
  journal?: RunJournal | undefined;
  outagePause?: OutagePauseOptions | false | undefined;
}

/**
 * The dispatcher of one runTrials call: keeps up to `concurrency` attempts in flight, sleeps
 * retries on the clock, and stops at the deadline, on the caller's signal, or when its own
 * bookkeeping fails. What happens to each task is decided in decision.ts; this class only carries
 * those decisions out. Use once.
 */
export class TrialRun<T, O extends JsonValue> {
  readonly #states: readonly TaskState<T, O>[];
  readonly #trial: TrialFunction<T, O>;
  readonly #clock: Clock;
  readonly #events: TypedEvents<RunEvents>;
  readonly #concurrency: number;
  readonly #policy: RetryPolicy;
  readonly #deadlineMs: number | undefined;
  readonly #callerSignal: AbortSignal | undefined;
  readonly #journal: RunJournal | undefined;
  readonly #gate: OutageGate;
  /** A wake-up is set for when the outage gate reopens. */
  #gateTimer = false;

  // ---------------------------------------------------------------- the dispatcher
  /** Tasks waiting for a slot. */
  readonly #ready: TaskState<T, O>[] = [];
  readonly #inflight = new Set<Promise<void>>();
  #running = 0;
  /** Retries sleeping out their backoff. */
  #delayed = 0;
  /** The run has reported; an attempt that settles after that is dropped. */
  #finished = false;
  /** Resolves on the next change the loop must look at; it sleeps on this instead of polling. */
  #changed: Promise<void>;
  #wake: () => void = () => undefined;

  // ---------------------------------------------------------------- stopping (deadline, cancel)
  readonly #stopper = new AbortController();
  /** Aborts the deadline's sleep once the run is over. */
  readonly #watchers = new AbortController();
  #stopReason: StopReason | undefined;
  /**
   * A failure of the run's own bookkeeping (a listener that throws, a journal that cannot be
   * written): the run cannot keep its promises, so it stops and runTrials rejects with it.
   */
  #fatal: { error: unknown } | undefined;
  readonly #onCallerAbort = (): void => this.#stop('cancelled');

  // Kept incrementally: recounting every task per attempt would make a run quadratic.
  readonly #counts: RunProgress;

  constructor(states: readonly TaskState<T, O>[], trial: TrialFunction<T, O>, config: TrialRunConfig) {
    this.#states = states;
    this.#trial = trial;
    this.#clock = config.clock;
    this.#events = config.events;
    this.#concurrency = config.concurrency;
    this.#policy = config.policy;
    this.#deadlineMs = config.deadlineMs;
    this.#callerSignal = config.signal;
    this.#journal = config.journal;
    this.#gate = new OutageGate(config.outagePause);
    this.#changed = new Promise<void>((r) => (this.#wake = r));
    // One listener per attempt in flight: as many as `concurrency`, which is not a leak.
    setMaxListeners(0, this.#stopper.signal);
    this.#counts = { total: states.length, settled: 0, scored: 0, infraFailed: 0, notRun: 0, running: 0, attempts: 0 };
    for (const s of states) this.#counts.attempts += s.attempts.length;
  }

  /** Runs every task to a decision and returns their records; rejects if the run's own bookkeeping failed. */
  async run(): Promise<TaskRecord<O>[]> {
    this.#watchStops();
    // One loop, awaiting only plain promises: no tick passes between its end and `finished`, so an
    // abandoned attempt cannot slip a record in after the run gave up on it.
    try {
      this.#queueOrSettleAll();
      for (;;) {
        this.#startReady();
        if (this.#stopReason) {
          for (const s of this.#ready.splice(0)) this.#settle(s, this.#stopReason);
          if (this.#inflight.size > 0) {
            // Attempts were told to stop; give them a bounded time to settle and record themselves.
            const grace = new AbortController();
            await this.#inflightSettledOrGraceOver(grace.signal);
            grace.abort();
          }
          if (this.#delayed === 0 || this.#inflight.size > 0) break;
        }
        if (this.#inflight.size === 0 && this.#delayed === 0 && this.#ready.length === 0) break;
        await this.#changed;
      }
    } finally {
      this.#finished = true;
      this.#unwatchStops();
      this.#journal?.close();
    }
    if (this.#fatal) throw this.#fatal.error;
    // Anything still open (abandoned attempts past the grace period, or never started) ends here.
    for (const s of this.#states) this.#settle(s, this.#stopReason ?? 'cancelled');
    return this.#states.map((s) => taskRecord(s));
  }

  // ---------------------------------------------------------------- dispatching

  /** Queues every task with an attempt to make; settles those a journal already decided. */
  #queueOrSettleAll(): void {
    for (const s of this.#states) {
      if (startStep(s, this.#policy) === 'run') this.#ready.push(s);
      else this.#settle(s);
    }
  }

  #notify(): void {
    const wake = this.#wake;
    this.#changed = new Promise<void>((r) => (this.#wake = r));
    wake();
  }

  #startReady(): void {
    while (!this.#stopReason && this.#running < this.#concurrency && this.#ready.length > 0) {
      const wait = this.#gate.waitMs(this.#clock.now());
      if (wait > 0) return this.#wakeAfter(wait);
      this.#start(this.#ready.shift()!);
    }
  }

  /** Look at the ready queue again once the outage gate reopens (or the run stops). */
  #wakeAfter(ms: number): void {
    if (this.#gateTimer) return;
    this.#gateTimer = true;
    const wake = () => {
      this.#gateTimer = false;
      this.#notify();
    };
    this.#clock.sleep(ms, this.#stopper.signal).then(wake, wake);
  }

  #start(s: TaskState<T, O>): void {
    this.#running++;
    const p: Promise<void> = this.#runAttempt(s).finally(() => {
      this.#running--;
      this.#inflight.delete(p);
      this.#notify();
    });
    this.#inflight.add(p);
  }

  /** Every attempt in flight settled, or the grace period ran out; abort `grace` after, to drop its timer. */
  #inflightSettledOrGraceOver(grace: AbortSignal): Promise<unknown> {
    return Promise.race([Promise.allSettled([...this.#inflight]), this.#clock.sleep(STOP_GRACE_MS, grace).catch(() => undefined)]);
  }

  /** Retries the task once `ms` have passed, unless the run stops first. */
  #retryAfter(s: TaskState<T, O>, ms: number): void {
    this.#delayed++;
    this.#clock.sleep(ms, this.#stopper.signal).then(
      () => {
        this.#delayed--;
        this.#ready.push(s);
        this.#notify();
      },
      () => {
        this.#delayed--;
        this.#settle(s, this.#stopReason ?? 'cancelled');
        this.#notify();
      },
    );
  }

  // ---------------------------------------------------------------- one attempt

  async #runAttempt(s: TaskState<T, O>): Promise<void> {
    try {
      await this.#attemptOnce(s);
    } catch (error) {
      this.#failRun(error);
    }
  }

  async #attemptOnce(s: TaskState<T, O>): Promise<void> {
    const attempt = (s.attempts.at(-1)?.attempt ?? 0) + 1;
    // Cut when the attempt ends: an ended attempt's signal never aborts later.
    const link = linkSignals(this.#stopper.signal);
    const t0 = this.#clock.now();
    this.#journal?.started(s.id, attempt, t0);
    this.#events.emit('attempt:start', { taskId: s.id, attempt });
    const sandboxes = new SandboxTracker();
    let record: AttemptRecord<O>;
    try {
      const outcome = await this.#trial(s.task, { attempt, signal: link.signal, events: this.#events, taskId: s.id, sandboxes });
      const t1 = this.#clock.now();
      record = { taskId: s.id, attempt, startedAt: t0, endedAt: t1, durationMs: t1 - t0, status: 'outcome', outcome };
    } catch (error) {
      const t1 = this.#clock.now();
      const failure = attemptFailure(error, link.signal.aborted ? this.#stopReason : undefined);
      record = { taskId: s.id, attempt, startedAt: t0, endedAt: t1, durationMs: t1 - t0, status: 'failed', failure };
    } finally {
      link.dispose();
    }
    // Journaled with the record, so a resumed run keeps this attempt's counts.
    const account = await sandboxes.settle();
    if (account) record.sandboxes = account;
    const starts = sandboxes.starts();
    if (starts.length > 0) record.starts = starts;
    // The run gave up waiting on this attempt (past the stop grace period) and has reported.
    if (this.#finished) return;
    this.#record(s, record);
    this.#schedule(s);
    if (this.#events.listenerCount('run:progress') > 0) this.#events.emit('run:progress', { ...this.#counts, running: this.#running });
  }

  #record(s: TaskState<T, O>, record: AttemptRecord<O>): void {
    s.attempts.push(record);
    this.#counts.attempts++;
    if (!record.failure?.stoppedBy) s.counted++;
    this.#journal?.settled(record);
    this.#events.emit('attempt:end', record as AttemptRecord);
    const pauseMs = this.#gate.observe(record as AttemptRecord, this.#clock.now());
    if (pauseMs !== undefined) this.#events.emit('run:paused', { pauseMs, failure: record.failure!, taskId: s.id });
  }

  /** After an attempt: settle the task, or put it to sleep until its retry. */
  #schedule(s: TaskState<T, O>): void {
    const step = nextStep(s, this.#policy);
    const last = s.attempts.at(-1);
    // Decided: usable, or no retry left or worth it. Only an attempt the run itself stopped makes
    // the task "not run"; a permanent failure stays one even if the deadline passed meanwhile.
    if (step.action === 'settle') return this.#settle(s, last?.failure?.stoppedBy);
    // A retry was due but the run is stopping: the task did not get its chance.
    if (this.#stopReason) return this.#settle(s, this.#stopReason);
    this.#events.emit('retry:scheduled', { taskId: s.id, attempt: s.attempts.length + 1, delayMs: step.delayMs, failure: last!.failure! });
    this.#retryAfter(s, step.delayMs);
  }

  #settle(s: TaskState<T, O>, reason?: StopReason): void {
    if (s.done) return;
    s.done = true;
    if (reason && !s.attempts.some(usable)) s.stopReason = reason;
    const status = taskStatus(s);
    this.#counts.settled++;
    if (status === 'scored') this.#counts.scored++;
    else if (status === 'infra_failed') this.#counts.infraFailed++;
    else this.#counts.notRun++;
    if (this.#events.listenerCount('task:settled') > 0) this.#events.emit('task:settled', taskRecord(s));
  }

  // ---------------------------------------------------------------- stopping

  #watchStops(): void {
    if (this.#callerSignal?.aborted) this.#stop('cancelled');
    this.#callerSignal?.addEventListener('abort', this.#onCallerAbort, { once: true });
    if (this.#deadlineMs !== undefined) {
      this.#clock.sleep(this.#deadlineMs, this.#watchers.signal).then(
        () => this.#stop('deadline'),
        () => undefined,
      );
    }
  }

  #unwatchStops(): void {
    this.#watchers.abort();
    this.#callerSignal?.removeEventListener('abort', this.#onCallerAbort);
  }

  #stop(reason: StopReason): void {
    if (this.#stopReason) return;
    this.#stopReason = reason;
    this.#stopper.abort(new DOMException(reason === 'deadline' ? 'the run reached its deadline' : 'the run was cancelled', 'AbortError'));
    this.#notify();
  }

  #failRun(error: unknown): void {
    this.#fatal ??= { error };
    this.#stop('cancelled');
  }
}
