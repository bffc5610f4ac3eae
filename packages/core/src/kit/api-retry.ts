import { setTimeout as sleep } from 'node:timers/promises';
import { retryDelayMs } from '../trials/backoff.js';

/** How an idempotent API call is retried: a few quick tries, the server's Retry-After honoured up to a cap. */
export interface ApiRetryPolicy {
  /** Tries in all, the first included. */
  attempts: number;
  initialMs: number;
  maxMs: number;
  /** A Retry-After longer than this is not waited out here: the caller's own retries (runTrials) take over. */
  maxRetryAfterMs: number;
}

export const API_RETRY_DEFAULTS: Readonly<ApiRetryPolicy> = { attempts: 4, initialMs: 200, maxMs: 3_000, maxRetryAfterMs: 20_000 };

/** Whether an API error says "try again", and when: undefined for an answer that will not change. */
export type TransientAnswer = (error: unknown) => { retryAfterMs?: number } | undefined;

/**
 * Run an idempotent API call (a read, a list, a delete, the create of an object whose name the
 * caller chose), trying again while the API answers with something transient (429, 5xx, a dropped
 * connection). Only idempotent calls belong here: a retried call must not do its work twice. The
 * last error is thrown as it was, for the caller to classify; an abort ends the waiting at once.
 */
export async function retryIdempotent<T>(
  call: () => Promise<T>,
  transient: TransientAnswer,
  opts: { policy?: Partial<ApiRetryPolicy>; signal?: AbortSignal; random?: () => number } = {},
): Promise<T> {
  const policy = { ...API_RETRY_DEFAULTS, ...opts.policy };
  const random = opts.random ?? Math.random;
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      const answer = attempt < policy.attempts && !opts.signal?.aborted ? transient(error) : undefined;
      if (!answer || (answer.retryAfterMs ?? 0) > policy.maxRetryAfterMs) throw error;
      const delay = retryDelayMs(attempt, { initialMs: policy.initialMs, maxMs: policy.maxMs, multiplier: 2, jitter: 0.5 }, random, answer.retryAfterMs);
      const waited = await sleep(delay, true, opts.signal ? { signal: opts.signal } : {}).catch(() => false);
      if (!waited) throw error;
    }
  }
}
