import type { BackoffOptions } from '../time/backoff.js';
import type { Clock } from '../time/clock.js';
import type { RunIdentity } from './run-identity.js';
import type { Environment } from '../contract.js';
import type { TypedEvents } from '../events.js';
import type { ClassifiedFailure } from '../classify.js';
import type { SerializedError } from '../errors.js';
import type { StartPhase, StartTimings } from '../start-timings.js';

/** Anything JSON can carry: what a trial returns, e.g. `{ reward: 1 }`. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

export interface TrialContext {
  /** 1-based, continuing across resumes. */
  attempt: number;
  /** Aborts on the caller's signal, at the run's deadline, or when the run is cancelled. */
  signal: AbortSignal;
  events: TypedEvents<RunEvents>;
  taskId: string;
  /**
   * The attempt's sandbox accounting (report.sandboxes): tear each environment down with
   * `sandboxes.teardown(env)` rather than `env.teardown()`, so the report knows what was created,
   * what was removed and what was not; and `track` it as soon as it is made (before `start`), so
   * that one the trial never tears down (a path that forgot, a throw past the cleanup) is torn
   * down and counted by the run when the trial ends.
   */
  sandboxes: TrialSandboxes;
}

/** How a trial tells the run about its sandboxes (TrialContext.sandboxes); see SandboxTracker. */
export interface TrialSandboxes {
  /** Count this environment in the attempt's accounting, and have the run tear it down if the trial does not. Again: no effect. */
  track(env: Environment): void;
  /**
   * `env.teardown(opts)`, recorded: removed, nothing to remove, or not removed (with the error,
   * which is rethrown). Tracks the environment first if it was not.
   */
  teardown(env: Environment, opts?: { signal?: AbortSignal }): Promise<void>;
}

/** A sandbox a teardown could not remove, as an attempt records it. */
export interface AttemptSandboxLeft {
  /** The environment's id: the sandbox's name on its backend (a container, a pod, a Modal sandbox's berth name). */
  id: string;
  backend: string;
  /** The teardown error's message, secrets redacted. */
  error: string;
}

/**
 * What one attempt did with sandboxes. `created`: environments whose start got as far as asking
 * the backend to make the sandbox (the request sent, or possibly sent: an answer lost counts);
 * one whose start failed before that (an image that would not pull or build, an engine refusing
 * the connection) or that was never started is not counted. `removed`: those a teardown removed.
 * `created - removed` is `notRemoved.length`.
 */
export interface AttemptSandboxes {
  created: number;
  removed: number;
  notRemoved: AttemptSandboxLeft[];
}

/** A sandbox of the run that was not removed, named for `berth sweep` or a person. */
export interface SandboxNotRemoved extends AttemptSandboxLeft {
  taskId: string;
  attempt: number;
}

/**
 * The run's sandboxes (RunReport.sandboxes): every attempt's accounting summed. Cumulative over a
 * resumed run's sessions, like `attempts`: a reused attempt brings its counts from the journal.
 * An attempt the process died under (resume.interruptedAttempts) has none: its sandbox was left to
 * the guardian or a sweep, and nobody knows here whether it was removed.
 */
export interface SandboxAccounting {
  created: number;
  removed: number;
  notRemoved: SandboxNotRemoved[];
}

export type TrialFunction<T, O extends JsonValue> = (task: T, ctx: TrialContext) => Promise<O>;

/** A failed attempt as recorded: its classification plus the whole serialised cause chain. */
export interface AttemptFailure extends ClassifiedFailure {
  /** Set when the run (deadline or caller) stopped the attempt, rather than the attempt failing. */
  stoppedBy?: 'deadline' | 'cancelled';
  error: SerializedError;
}

export interface AttemptRecord<O extends JsonValue = JsonValue> {
  taskId: string;
  attempt: number;
  startedAt: number;
  endedAt: number;
  durationMs: number;
  /** 'outcome' when the trial returned; 'failed' when it threw. */
  status: 'outcome' | 'failed';
  outcome?: O;
  failure?: AttemptFailure;
  /** The sandboxes the attempt tracked (TrialContext.sandboxes); absent when it tracked none. */
  sandboxes?: AttemptSandboxes;
  /**
   * The starts of the environments the attempt tracked, in the order tracked: when each reached
   * each mark (Environment.startTimings). Journaled with the record; absent when none was started.
   */
  starts?: AttemptStart[];
}

/** One environment's start as an attempt records it. */
export interface AttemptStart {
  /** The environment's id (its sandbox's name on the backend). */
  id: string;
  backend: string;
  timings: StartTimings;
}

/** One start phase's durations over a run, in ms: how many starts had it, and its percentiles (nearest rank). */
export interface PhaseStats {
  count: number;
  p50: number;
  p95: number;
  p99: number;
}

/** Per start phase (named by the mark it ends at; see startPhases), in START_MARKS order. */
export type StartPhaseStats = Partial<Record<StartPhase['phase'], PhaseStats>>;

/**
 * - scored: a usable attempt exists (an outcome, or a task failure: the sandbox worked).
 * - infra_failed: every attempt failed on infrastructure and no retry is left (or worth it).
 * - not_run: the deadline or a cancellation stopped the task before it had a usable attempt.
 */
export type TaskStatus = 'scored' | 'infra_failed' | 'not_run';

export interface TaskRecord<O extends JsonValue = JsonValue> {
  taskId: string;
  status: TaskStatus;
  /** The attempt number of the chosen trial: the first usable attempt, never the best reward. */
  chosenAttempt?: number;
  /** The chosen attempt's outcome (absent for a task failure). */
  outcome?: O;
  /** Set when the chosen attempt was a task failure, or for infra_failed / not_run: the last failure. */
  failure?: AttemptFailure;
  notRunReason?: 'deadline' | 'cancelled';
  attempts: AttemptRecord<O>[];
}

export interface ValidityThresholds {
  /** Minimum scored / total. Default 0.95. */
  minCoverage?: number;
  /** Permanent infrastructure failures tolerated (tasks). Default 0: one makes the run invalid. */
  maxPermanentInfra?: number;
  /** Unclassified failures tolerated (tasks). Default 0. */
  maxUnclassified?: number;
  /** Scored tasks whose outcome has no numeric score field, tolerated. Default 0. */
  maxUnscored?: number;
}

export interface RunReport {
  total: number;
  /** Tasks with a usable attempt: outcomes plus task failures. */
  scored: number;
  taskFailures: number;
  infraFailed: { total: number; transient: number; permanent: number; unclassified: number };
  notRun: { total: number; deadline: number; cancelled: number };
  /** scored / total; never hidden. */
  coverage: number;
  attempts: number;
  /** Attempts after a task's first that retried a failure (re-runs of attempts the run itself stopped are not retries). */
  retries: number;
  /** Failed attempts by category and by error type (every attempt, not only final ones). */
  byCategory: Record<string, number>;
  byType: Record<string, number>;
  /** Tasks whose final failure nobody classified. */
  unclassified: number;
  /**
   * Scored tasks whose outcome has no numeric score field (a trial that returned nothing, or
   * another shape): they are in `scored` but not in `score.over`.
   */
  unscored: number;
  /**
   * The mean of the numeric outcome field (`scoreField`, default 'reward') over scored tasks, task
   * failures counting as 0. Always read beside `coverage`.
   */
  score?: { field: string; mean: number; over: number; coverage: number };
  valid: boolean;
  /** Why the run is invalid, in words; empty when valid. */
  invalidReasons: string[];
  /** The run's time: after a resume, every session's (each from its start to its last journaled moment) summed. */
  durationMs: number;
  /**
   * Sandboxes created, removed, and each one not removed, named (see SandboxAccounting). A
   * sandbox left behind does not make the run invalid (scores do not depend on it), but it costs
   * until `sweep` removes it.
   */
  sandboxes: SandboxAccounting;
  /**
   * Per backend, per start phase: how long the run's starts took to reach each mark from the one
   * before (every attempt's recorded starts, failed ones too: the marks they reached). Absent when
   * no attempt recorded a start (an older journal, trials that track no environment).
   */
  startPhases?: Record<string, StartPhaseStats>;
}

export interface RunResult<O extends JsonValue = JsonValue> {
  report: RunReport;
  tasks: TaskRecord<O>[];
  /**
   * What resuming from a journal reused, when a journal was given: settled attempts reused,
   * attempts the process died under (run again), and tasks whose version changed since they were
   * journaled (their earlier attempts are not reused: they run again).
   */
  resume?: { reusedAttempts: number; interruptedAttempts: number; changedTasks: string[] };
}

export interface RunProgress {
  total: number;
  settled: number;
  scored: number;
  infraFailed: number;
  notRun: number;
  running: number;
  attempts: number;
}

export interface RunEvents {
  'attempt:start': (e: { taskId: string; attempt: number }) => void;
  'attempt:end': (record: AttemptRecord) => void;
  'retry:scheduled': (e: { taskId: string; attempt: number; delayMs: number; failure: AttemptFailure }) => void;
  'task:settled': (record: TaskRecord) => void;
  'run:progress': (progress: RunProgress) => void;
  /** An attempt found the backend unreachable: new attempts wait `pauseMs` (running ones go on). */
  'run:paused': (e: { pauseMs: number; failure: AttemptFailure; taskId: string }) => void;
  'run:end': (report: RunReport) => void;
}

/** The pause of new attempts while the backend is unreachable (see RunTrialsOptions.outagePause). */
export interface OutagePauseOptions {
  /** The first pause. Default 1000 ms. */
  initialMs?: number;
  /** The longest; the pause doubles while the outage lasts. Default 30,000 ms. */
  maxMs?: number;
}

export interface RunTrialsOptions<T> {
  /** A stable id per task; default: the task itself if a string, else its `id` or `name`. */
  taskId?: (task: T) => string;
  /** Attempts per task, first included. Default 3. */
  maxAttempts?: number;
  /** Trials running at once. Default 4. */
  concurrency?: number;
  /** Overall budget from the start of the run; then running attempts are stopped and no new ones start. */
  deadlineMs?: number;
  backoff?: BackoffOptions;
  /**
   * When an attempt fails because the backend is unreachable (BackendUnavailableError), hold every
   * new attempt for a pause that doubles while it lasts, so an engine restart or an API outage does
   * not burn every task's attempts in seconds. Default on ({ initialMs: 1000, maxMs: 30000 }); false turns it off.
   */
  outagePause?: OutagePauseOptions | false;
  /** Should this failed attempt be retried? Default: its category is retryable (transient_infra). */
  retryOn?: (failure: ClassifiedFailure & { attempt: number; taskId: string }) => boolean;
  /**
   * Append-only JSONL journal: resuming with the same path reuses every settled attempt. A journal
   * of another run (other task ids, maxAttempts, scoreField or runIdentity) is refused with a
   * RunMismatchError that says what changed.
   */
  journal?: string;
  /**
   * What decides results besides the tasks (the agent, the backend and its target, settings), by
   * name: part of the journal's identity, so a resume with other values is refused. The values are
   * shown in that refusal: never put a secret in them (hash it).
   */
  runIdentity?: RunIdentity;
  /**
   * A task's version, e.g. a hash of its files: an attempt journaled under another version is not
   * reused, and the task runs again (listed in `resume.changedTasks`).
   */
  taskVersion?: (task: T) => string;
  /** Start the journal over; an existing one is moved aside to `<journal>.replaced-<time>`, not deleted. */
  fresh?: boolean;
  signal?: AbortSignal;
  validity?: ValidityThresholds;
  /** The numeric outcome field averaged in the report. Default 'reward'. */
  scoreField?: string;
  events?: TypedEvents<RunEvents>;
  clock?: Clock;
  /** A source of randomness in [0, 1) for jitter. Default Math.random. */
  random?: () => number;
}

export type { BackoffOptions, Clock };
