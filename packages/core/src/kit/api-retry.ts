import { BerthError } from '../errors.js';
import { retryDelayMs } from '../time/backoff.js';
import { systemClock } from '../time/clock.js';
import type { Clock } from '../time/clock.js';

/** How an idempotent API call is retried: a few quick tries, the server's Retry-After honoured up to a cap. */
export interface ApiRetryPolicy {
  /** Tries in all, the first included: attempts - 1 retries for the failures counted under this policy. */
  attempts: number;
  /** The first wait; it doubles per retry up to maxMs, and up to half of it is randomised away. */
  initialMs: number;
  maxMs: number;
  /** A Retry-After longer than this is not waited out here: the caller's own retries (runTrials) take over. */
  maxRetryAfterMs: number;
}

export const API_RETRY_DEFAULTS: Readonly<ApiRetryPolicy> = { attempts: 4, initialMs: 200, maxMs: 3_000, maxRetryAfterMs: 20_000 };

/** Why a failed call is worth another try. */
export interface RetryAnswer {
  /** When the server said to come back; without it, a BerthError's own retryAfterMs is used. */
  retryAfterMs?: number;
  /**
   * A policy of its own for this kind of failure, whose retries are counted apart from the others
   * (Modal's rate limits: waited out more often and longer than a dropped connection). The same
   * object for every answer of that kind; the call's policy when absent.
   */
  policy?: Readonly<ApiRetryPolicy>;
}

/** Whether an error says "try again", and how: undefined for an answer that will not change. */
export type TransientAnswer = (error: unknown) => RetryAnswer | undefined;

export interface RetryOptions {
  policy?: Partial<ApiRetryPolicy>;
  signal?: AbortSignal;
  /** Draws in [0, 1) for the jitter; tests fix them. */
  random?: () => number;
  /** Whose sleep the waits are; tests pass a VirtualClock or a recorder. */
  clock?: Pick<Clock, 'sleep'>;
}

/**
 * Run an idempotent API call (a read, a list, a delete, the create of an object whose name the
 * caller chose, a call the server deduplicates by an idempotency key), trying again while
 * `transient` says the failure may pass (429, 5xx, a dropped connection), with exponential
 * backoff and jitter (the math runTrials' backoff uses, retryDelayMs), never sooner than the
 * server's retry-after. Only idempotent calls belong here: a retried call must not do its work
 * twice. The last error is thrown as it was, for the caller to classify; so is the error of a try
 * that failed once the signal had fired. An abort while waiting between tries rejects at once
 * with the signal's reason.
 */
export async function retryIdempotent<T>(call: () => Promise<T>, transient: TransientAnswer, opts: RetryOptions = {}): Promise<T> {
  const policy: Readonly<ApiRetryPolicy> = { ...API_RETRY_DEFAULTS, ...opts.policy };
  const random = opts.random ?? Math.random;
  const clock = opts.clock ?? systemClock;
  const retried = new Map<Readonly<ApiRetryPolicy>, number>();
  for (;;) {
    try {
      return await call();
    } catch (error) {
      const answer = opts.signal?.aborted ? undefined : transient(error);
      if (!answer) throw error;
      const counted = answer.policy ?? policy;
      const retry = (retried.get(counted) ?? 0) + 1;
      const retryAfterMs = answer.retryAfterMs ?? (BerthError.isInstance(error) ? error.retryAfterMs : undefined);
      if (retry >= counted.attempts || (retryAfterMs ?? 0) > counted.maxRetryAfterMs) throw error;
      retried.set(counted, retry);
      const backoff = { initialMs: counted.initialMs, maxMs: counted.maxMs, multiplier: 2, jitter: 0.5 };
      await clock.sleep(retryDelayMs(retry, backoff, random, retryAfterMs), opts.signal);
    }
  }
}
