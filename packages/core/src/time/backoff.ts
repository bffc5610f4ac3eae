export interface BackoffOptions {
  /** First retry delay. Default 1000 ms. */
  initialMs?: number;
  /** Cap on any delay. Default 60,000 ms. */
  maxMs?: number;
  /** Growth per retry. Default 2. */
  multiplier?: number;
  /** Fraction of the delay randomised away (0 = none, 1 = full jitter). Default 0.5. */
  jitter?: number;
}

/** Backoff options with every default filled in. */
export type Backoff = Required<BackoffOptions>;

export const BACKOFF_DEFAULTS: Readonly<Backoff> = { initialMs: 1000, maxMs: 60_000, multiplier: 2, jitter: 0.5 };

export function resolveBackoff(options?: BackoffOptions): Backoff {
  return { ...BACKOFF_DEFAULTS, ...options };
}

/**
 * The wait before the next attempt of a task that has used `counted` attempts: exponential from
 * initialMs, capped at maxMs, then up to `jitter` of it randomised away so that tasks that failed
 * together do not all retry together. Never sooner than `retryAfterMs`: a server that said when to
 * come back knows better than the formula. The kit's retryIdempotent waits between API tries by
 * the same formula.
 *
 * @param random a number in [0, 1); each call takes exactly one draw.
 */
export function retryDelayMs(counted: number, backoff: Backoff, random: () => number, retryAfterMs?: number): number {
  const base = Math.min(backoff.maxMs, backoff.initialMs * backoff.multiplier ** Math.max(0, counted - 1));
  const jittered = base * (1 - backoff.jitter * random());
  return Math.round(Math.max(jittered, retryAfterMs ?? 0));
}
