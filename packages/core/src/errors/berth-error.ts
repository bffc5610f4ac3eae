import { redactSecrets } from '../redact.js';
import type { Remedy } from './remedy.js';

/**
 * Why an operation failed, in the terms a runner acts on:
 * - transient_infra: the infrastructure failed; a new attempt may succeed.
 * - permanent_infra: the infrastructure is misconfigured; retrying burns money.
 * - task_failure: the sandbox worked, the task did not.
 * - cancelled: the caller aborted.
 */
export type FailureCategory = 'transient_infra' | 'permanent_infra' | 'task_failure' | 'cancelled';

export const FAILURE_CATEGORIES: readonly FailureCategory[] = ['transient_infra', 'permanent_infra', 'task_failure', 'cancelled'];

export type Operation =
  | 'start'
  | 'pull'
  | 'build'
  | 'exec'
  | 'network'
  | 'upload'
  | 'download'
  | 'teardown'
  | 'preflight'
  | 'sweep'
  | 'config'
  | 'trial'
  | 'snapshot';

export interface BerthErrorOptions {
  message: string;
  cause?: unknown;
  operation?: Operation;
  backend?: string;
  environmentId?: string;
  /** A hint from the infrastructure (e.g. a 429's retry-after) for when a retry makes sense. */
  retryAfterMs?: number;
  /** What fixes it, when the message names an option, flag or action: its `says` is in the message, word for word. */
  remedy?: Remedy;
}

/** The JSON form of an error and its whole cause chain, secrets redacted. */
export interface SerializedError {
  name: string;
  message: string;
  type?: string;
  category?: FailureCategory;
  retryable?: boolean;
  operation?: Operation;
  backend?: string;
  environmentId?: string;
  retryAfterMs?: number;
  remedy?: Remedy;
  code?: string | number;
  statusCode?: number;
  details?: Record<string, string | number | boolean | null>;
  cause?: SerializedError;
}

const BERTH_MARKER = Symbol.for('berth.error');

/** Does the value carry this brand? (`isInstance` across duplicate copies of the package.) */
export function hasMarker(value: unknown, marker: symbol): boolean {
  return value !== null && typeof value === 'object' && marker in value && (value as Record<symbol, unknown>)[marker] === true;
}

/**
 * The root of every failure that leaves berth. Subclasses are branded with
 * Symbol.for('berth.error.<Name>') so that `isInstance` works across duplicate copies of the
 * package, where `instanceof` does not.
 */
export abstract class BerthError extends Error {
  private readonly [BERTH_MARKER] = true;
  abstract readonly category: FailureCategory;
  abstract readonly retryable: boolean;
  /** A stable name for counting failures by kind, e.g. 'SandboxLostError'. */
  abstract readonly type: string;
  readonly operation?: Operation;
  readonly backend?: string;
  readonly environmentId?: string;
  readonly retryAfterMs?: number;
  /** What fixes it (see Remedy): set where the message is built, so the two agree. */
  readonly remedy?: Remedy;

  constructor(options: BerthErrorOptions) {
    super(options.message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    if (options.operation !== undefined) this.operation = options.operation;
    if (options.backend !== undefined) this.backend = options.backend;
    if (options.environmentId !== undefined) this.environmentId = options.environmentId;
    if (options.retryAfterMs !== undefined) this.retryAfterMs = options.retryAfterMs;
    if (options.remedy !== undefined) this.remedy = { id: options.remedy.id, says: options.remedy.says };
  }

  static isInstance(error: unknown): error is BerthError {
    return hasMarker(error, BERTH_MARKER);
  }

  /** Extra, non-secret facts a subclass wants in its JSON form. */
  protected details(): Record<string, string | number | boolean | null> | undefined {
    return undefined;
  }

  /**
   * The error and its cause chain as JSON, secrets redacted. (JSON.stringify passes a key as the
   * argument; serializeError passes the errors already visited, so a cyclic chain ends.)
   */
  toJSON(visited?: unknown): SerializedError {
    const seen = visited instanceof WeakSet ? (visited as WeakSet<object>) : new WeakSet<object>();
    seen.add(this);
    bumpDepth(seen);
    const out: SerializedError = {
      name: this.name,
      type: this.type,
      message: redactSecrets(this.message),
      category: this.category,
      retryable: this.retryable,
    };
    if (this.operation) out.operation = this.operation;
    if (this.backend) out.backend = this.backend;
    if (this.environmentId) out.environmentId = this.environmentId;
    if (this.retryAfterMs !== undefined) out.retryAfterMs = this.retryAfterMs;
    // Redacted as the message is, so its words are still found in it.
    if (this.remedy) out.remedy = { id: this.remedy.id, says: redactSecrets(this.remedy.says) };
    const details = this.details();
    if (details) out.details = details;
    if (this.cause !== undefined) out.cause = serializeError(this.cause, seen);
    return out;
  }
}

// How deep a serialisation has gone, kept beside its visited set.
const depths = new WeakMap<WeakSet<object>, number>();
function depthOf(seen: WeakSet<object>): number {
  return depths.get(seen) ?? 0;
}
function bumpDepth(seen: WeakSet<object>): void {
  depths.set(seen, depthOf(seen) + 1);
}

/** Serialise any thrown value with its cause chain; only known-safe fields are kept, and redacted. */
export function serializeError(error: unknown, seen: WeakSet<object> = new WeakSet()): SerializedError {
  if (error !== null && typeof error === 'object') {
    if (seen.has(error)) return { name: 'Error', message: '(cycle in the cause chain)' };
    // Very long chains are cut: what matters is near the top.
    if (depthOf(seen) > 16) return { name: 'Error', message: '(cause chain truncated)' };
  }
  if (BerthError.isInstance(error)) return error.toJSON(seen);
  if (error instanceof Error) {
    seen.add(error);
    bumpDepth(seen);
    const out: SerializedError = { name: error.name, message: redactSecrets(error.message) };
    const record = error as Error & { code?: unknown; statusCode?: unknown; status?: unknown };
    if (typeof record.code === 'string' || typeof record.code === 'number') out.code = record.code;
    const status = typeof record.statusCode === 'number' ? record.statusCode : record.status;
    if (typeof status === 'number') out.statusCode = status;
    if (error.cause !== undefined) out.cause = serializeError(error.cause, seen);
    return out;
  }
  let text: string;
  try {
    text = typeof error === 'string' ? error : (JSON.stringify(error) ?? String(error));
  } catch {
    text = String(error);
  }
  return { name: 'NonError', message: redactSecrets(text) };
}

// ---------------------------------------------------------------------------------------------
