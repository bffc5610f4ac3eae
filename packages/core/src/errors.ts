// The error taxonomy. The root and its serialisation live in errors/berth-error.ts, the errors of
// getting a sandbox up in errors/start-errors.ts; this module holds the rest and exports them all.
import { BerthError, hasMarker, type BerthErrorOptions, type FailureCategory } from './errors/berth-error.js';

export * from './errors/berth-error.js';
export * from './errors/start-errors.js';
export * from './errors/remedy.js';

const sandboxLost = Symbol.for('berth.error.SandboxLostError');
/** The sandbox died, was evicted or vanished while berth was using it. */
export class SandboxLostError extends BerthError {
  private readonly [sandboxLost] = true;
  readonly category = 'transient_infra' as const;
  readonly retryable = true;
  readonly type = 'SandboxLostError';
  /** What was last seen of the sandbox, e.g. 'exited (137)', 'OOMKilled', 'Evicted'. */
  readonly lastState?: string;
  constructor(options: BerthErrorOptions & { lastState?: string }) {
    super(options);
    if (options.lastState !== undefined) this.lastState = options.lastState;
  }
  static override isInstance(e: unknown): e is SandboxLostError {
    return hasMarker(e, sandboxLost);
  }
  protected override details() {
    return this.lastState === undefined ? undefined : { lastState: this.lastState };
  }
}

const backendUnavailable = Symbol.for('berth.error.BackendUnavailableError');
/** The backend's API could not be reached or answered with a server error / throttling. */
export class BackendUnavailableError extends BerthError {
  private readonly [backendUnavailable] = true;
  readonly category = 'transient_infra' as const;
  readonly retryable = true;
  readonly type = 'BackendUnavailableError';
  static override isInstance(e: unknown): e is BackendUnavailableError {
    return hasMarker(e, backendUnavailable);
  }
}

const backendAuth = Symbol.for('berth.error.BackendAuthError');
/** The backend rejected berth's own credentials (not the image registry's: that is ImagePullError). */
export class BackendAuthError extends BerthError {
  private readonly [backendAuth] = true;
  readonly category = 'permanent_infra' as const;
  readonly retryable = false;
  readonly type = 'BackendAuthError';
  static override isInstance(e: unknown): e is BackendAuthError {
    return hasMarker(e, backendAuth);
  }
}

const config = Symbol.for('berth.error.ConfigError');
/** The input or configuration is wrong; the message says what and how to fix it. */
export class ConfigError extends BerthError {
  private readonly [config] = true;
  readonly category = 'permanent_infra' as const;
  readonly retryable = false;
  readonly type = 'ConfigError';
  /** Which input was wrong, e.g. 'spec.resources.cpus'. */
  readonly path?: string;
  constructor(options: BerthErrorOptions & { path?: string }) {
    super(options);
    if (options.path !== undefined) this.path = options.path;
  }
  static override isInstance(e: unknown): e is ConfigError {
    return hasMarker(e, config);
  }
  protected override details(): Record<string, string> | undefined {
    return this.path === undefined ? undefined : { path: this.path };
  }
}

const capability = Symbol.for('berth.error.CapabilityError');
/** The backend cannot do what the spec asks (GPUs on Docker without a runtime, an auth kind...). */
export class CapabilityError extends BerthError {
  private readonly [capability] = true;
  readonly category = 'permanent_infra' as const;
  readonly retryable = false;
  readonly type = 'CapabilityError';
  readonly capability: string;
  constructor(options: BerthErrorOptions & { capability: string }) {
    super(options);
    this.capability = options.capability;
  }
  static override isInstance(e: unknown): e is CapabilityError {
    return hasMarker(e, capability);
  }
  protected override details() {
    return { capability: this.capability };
  }
}

export type TransferReason = 'sandbox_lost' | 'not_found' | 'unsafe_entry' | 'local_io' | 'remote_io' | 'interrupted';

const transfer = Symbol.for('berth.error.TransferError');
/**
 * An upload or download failed. Its category comes from its cause when the cause is classified
 * (an upload into a dead sandbox is transient_infra because of the SandboxLostError beneath it),
 * never a vaguer "failed to add tests directory".
 */
export class TransferError extends BerthError {
  private readonly [transfer] = true;
  readonly type = 'TransferError';
  readonly reason: TransferReason;
  readonly localPath?: string;
  readonly remotePath?: string;
  readonly #category: FailureCategory;
  readonly #retryable: boolean;
  constructor(
    options: BerthErrorOptions & {
      reason: TransferReason;
      localPath?: string;
      remotePath?: string;
      category?: FailureCategory;
    },
  ) {
    super(options);
    this.reason = options.reason;
    if (options.localPath !== undefined) this.localPath = options.localPath;
    if (options.remotePath !== undefined) this.remotePath = options.remotePath;
    const fromCause = findBerthCause(options.cause);
    if (fromCause) {
      this.#category = fromCause.category;
      this.#retryable = fromCause.retryable;
    } else {
      this.#category = options.category ?? 'permanent_infra';
      this.#retryable = this.#category === 'transient_infra';
    }
  }
  get category(): FailureCategory {
    return this.#category;
  }
  get retryable(): boolean {
    return this.#retryable;
  }
  static override isInstance(e: unknown): e is TransferError {
    return hasMarker(e, transfer);
  }
  protected override details() {
    return {
      reason: this.reason,
      localPath: this.localPath ?? null,
      remotePath: this.remotePath ?? null,
    };
  }
}

const cancelled = Symbol.for('berth.error.CancelledError');
/** The caller aborted (AbortSignal). Not retried, not counted as a task failure. */
export class CancelledError extends BerthError {
  private readonly [cancelled] = true;
  readonly category = 'cancelled' as const;
  readonly retryable = false;
  readonly type = 'CancelledError';
  static override isInstance(e: unknown): e is CancelledError {
    return hasMarker(e, cancelled);
  }
}

const taskFailure = Symbol.for('berth.error.TaskFailure');
/** Raised by runners: the sandbox worked, the task did not (no reward file, verifier crashed...). */
export class TaskFailure extends BerthError {
  private readonly [taskFailure] = true;
  readonly category = 'task_failure' as const;
  readonly retryable = false;
  readonly type: string;
  /**
   * @param options.kind a stable sub-type for counting, e.g. 'RewardFileMissing'; defaults to 'TaskFailure'.
   */
  constructor(options: BerthErrorOptions & { kind?: string }) {
    super(options);
    this.type = options.kind ?? 'TaskFailure';
  }
  static override isInstance(e: unknown): e is TaskFailure {
    return hasMarker(e, taskFailure);
  }
}

const taskDefinition = Symbol.for('berth.error.TaskDefinitionError');
/**
 * The task itself is defined wrongly, in a way berth can see: a script with CRLF line endings, no
 * verifier or one that cannot start, a reward file with no score, no solution for the oracle. Not
 * a task failure (no model is scored 0 for it) and not retried; the run is invalid until the task
 * is fixed, and the message says how. Its category is permanent_infra (retrying cannot help and
 * the score would not be the model's); its type tells it apart from a misconfigured backend.
 */
export class TaskDefinitionError extends BerthError {
  private readonly [taskDefinition] = true;
  readonly category = 'permanent_infra' as const;
  readonly retryable = false;
  readonly type = 'TaskDefinitionError';
  /** The task's file that is wrong, relative to the task's directory (e.g. 'tests/test.sh'). */
  readonly path?: string;
  constructor(options: BerthErrorOptions & { path?: string }) {
    super(options);
    if (options.path !== undefined) this.path = options.path;
  }
  static override isInstance(e: unknown): e is TaskDefinitionError {
    return hasMarker(e, taskDefinition);
  }
  protected override details(): Record<string, string> | undefined {
    return this.path === undefined ? undefined : { path: this.path };
  }
}

/** The first BerthError in a cause chain, starting with the value itself. */
export function findBerthCause(error: unknown): BerthError | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 32 && current !== undefined && current !== null; depth++) {
    if (BerthError.isInstance(current)) return current;
    current = current instanceof Error ? current.cause : undefined;
  }
  return undefined;
}
