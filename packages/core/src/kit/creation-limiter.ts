import { raceAbort } from '../abort.js';
import { ConfigError } from '../errors.js';
import { systemClock } from '../time/clock.js';
import type { Clock } from '../time/clock.js';

/** How fast one backend instance may create sandboxes. Unset fields mean no limit. */
export interface CreationLimits {
  /** Creations in flight at once (pull + create + start). */
  maxConcurrent?: number;
  /** Creations begun per second, spaced evenly (no bursts: APIs count them over short windows). */
  perSecond?: number;
}

/**
 * The pause after the engine throttled a creation without saying for how long: 0.5 s, doubling
 * per throttling in a row, up to 10 s; a creation that succeeds starts it over. The same numbers
 * serve a transport that waits out the throttled request itself (with the kit's retryDelayMs).
 */
export const THROTTLE_BACKOFF = { initialMs: 500, maxMs: 10_000, multiplier: 2, jitter: 0 } as const;

/** What a start waiting for its turn is told, in a user's words. */
export function throttledStatus(waitMs: number): string {
  return `throttled by the engine: waiting ${Math.max(0, Math.round(waitMs))} ms`;
}
const QUEUED = 'waiting for a creation slot (creation limits)';

interface Waiter {
  grant(): void;
  tell?: (why: string) => void;
}

/**
 * Bounds sandbox creation per backend instance: Modal limits creation to a few per second and
 * Kubernetes API servers throttle, so a runner starting 500 sandboxes at once must queue here
 * rather than be refused there. Waiters are served in order; an aborted waiter leaves the queue;
 * a slot given back passes straight to the head of the queue, so a newcomer cannot overtake it.
 *
 * When the engine says it is overloaded (`throttled()`, from a transport's progress), no creation
 * begins until the pause it asked for (Retry-After, else THROTTLE_BACKOFF) has passed, and the
 * creations allowed at once are halved (from those in flight, at least 1); each creation begun
 * since then that succeeds allows one more again, up to maxConcurrent. Additive increase, multiplicative decrease:
 * a runner settles at the rate the engine takes instead of being refused over and over.
 */
export class CreationLimiter {
  readonly #max: number;
  readonly #intervalMs: number;
  readonly #clock: Clock;
  readonly #queue: Waiter[] = [];
  #active = 0;
  /** The creations allowed at once now: maxConcurrent until the engine throttles. */
  #limit: number;
  #nextStartAt = 0;
  /** No creation begins before this (the engine's pause). */
  #pausedUntil = 0;
  /** Throttlings in a row without a success: the exponent of the backoff. */
  #strikes = 0;
  /** Counts the overloads: a creation begun before the last one proves nothing by succeeding. */
  #epoch = 0;
  /** The one timer that wakes the queue when its head may begin. */
  #timer: AbortController | undefined;

  constructor(limits: CreationLimits = {}, clock: Clock = systemClock) {
    for (const key of ['maxConcurrent', 'perSecond'] as const) {
      const value = limits[key];
      if (value !== undefined && !(value > 0)) {
        throw new ConfigError({ operation: 'config', path: `creation.${key}`, message: `creation.${key} must be a positive number, got ${value}` });
      }
    }
    this.#max = limits.maxConcurrent ?? Infinity;
    this.#limit = this.#max;
    this.#intervalMs = limits.perSecond ? 1000 / limits.perSecond : 0;
    this.#clock = clock;
  }

  /** Creations running now. */
  get active(): number {
    return this.#active;
  }

  /** Creations waiting for their turn. */
  get waiting(): number {
    return this.#queue.length;
  }

  /** The creations allowed at once now: maxConcurrent, or less after the engine throttled. */
  get concurrency(): number {
    return this.#limit;
  }

  /** How long no creation may begin yet because the engine throttled; 0 when none is paused. */
  get pausedMs(): number {
    return Math.max(0, this.#pausedUntil - this.#clock.now());
  }

  /**
   * The engine refused or slowed a creation because it is overloaded (a 429, RESOURCE_EXHAUSTED),
   * asking for `retryAfterMs` if it said. Returns how long new creations now wait. Reports that
   * arrive while a pause runs belong to the same overload (creations sent together are refused
   * together): they may lengthen the pause but halve nothing again.
   */
  throttled(retryAfterMs?: number): number {
    const now = this.#clock.now();
    if (now >= this.#pausedUntil) {
      // Halved from what was in flight when the engine refused (TCP's rule), not from a limit
      // the creations never reached: with pacing, or no maxConcurrent, that would lower nothing.
      this.#limit = Math.max(1, Math.floor(Math.min(this.#limit, this.#active) / 2));
      this.#strikes++;
      this.#epoch++;
    }
    const backoff = Math.min(THROTTLE_BACKOFF.maxMs, THROTTLE_BACKOFF.initialMs * THROTTLE_BACKOFF.multiplier ** Math.max(0, this.#strikes - 1));
    const waitMs = retryAfterMs !== undefined && retryAfterMs >= 0 ? retryAfterMs : backoff;
    this.#pausedUntil = Math.max(this.#pausedUntil, now + waitMs);
    const why = throttledStatus(this.#pausedUntil - now);
    for (const waiter of this.#queue) waiter.tell?.(why);
    this.#pump();
    return this.#pausedUntil - now;
  }

  /**
   * Run `create` when the limits allow; `onWait` is told why whenever it has to wait (the queue,
   * or the engine's pause). Rejects with the signal's reason if it fires while waiting or
   * creating: a create that hangs gives its slot back when its caller gives up on it.
   */
  async run<T>(create: () => Promise<T>, signal?: AbortSignal, onWait?: (why: string) => void): Promise<T> {
    await this.#turn(signal, onWait);
    const epoch = this.#epoch;
    let succeeded = false;
    try {
      const result = await (signal ? raceAbort(create(), signal) : create());
      succeeded = true;
      return result;
    } finally {
      this.#release(succeeded && epoch === this.#epoch);
    }
  }

  /** When the head of the queue may begin: after the engine's pause and the pacing interval. */
  #startAt(): number {
    return Math.max(this.#nextStartAt, this.#pausedUntil);
  }

  #grant(waiter?: Waiter): void {
    this.#active++;
    this.#nextStartAt = this.#clock.now() + this.#intervalMs;
    waiter?.grant();
  }

  #turn(signal: AbortSignal | undefined, onWait: ((why: string) => void) | undefined): Promise<void> {
    signal?.throwIfAborted();
    if (this.#queue.length === 0 && this.#active < this.#limit && this.#startAt() <= this.#clock.now()) {
      this.#grant();
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        this.#queue.splice(this.#queue.indexOf(waiter), 1);
        if (this.#queue.length === 0) this.#stopTimer();
        reject(signal!.reason);
      };
      const waiter: Waiter = {
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        ...(onWait ? { tell: onWait } : {}),
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#queue.push(waiter);
      onWait?.(this.pausedMs > 0 ? throttledStatus(this.pausedMs) : QUEUED);
      this.#pump();
    });
  }

  /** `recovered`: a creation begun since the last overload succeeded, so one more may run at once. */
  #release(recovered: boolean): void {
    this.#active--;
    if (recovered) {
      this.#limit = Math.min(this.#max, this.#limit + 1);
      this.#strikes = 0;
    }
    this.#pump();
  }

  /** Grant the head of the queue while the limits allow it; otherwise wake up when they will. */
  #pump(): void {
    while (this.#queue.length > 0 && this.#active < this.#limit) {
      const waitMs = this.#startAt() - this.#clock.now();
      if (waitMs > 0) return this.#wakeIn(waitMs);
      this.#grant(this.#queue.shift());
    }
  }

  #wakeIn(ms: number): void {
    // The moment a waiter may begin only moves later (pauses and pacing add up), so a timer
    // already set wakes no later than needed; #pump sets the next one if it woke too early.
    if (this.#timer) return;
    const timer = new AbortController();
    this.#timer = timer;
    this.#clock.sleep(ms, timer.signal).then(
      () => {
        if (this.#timer !== timer) return;
        this.#timer = undefined;
        this.#pump();
      },
      () => undefined,
    );
  }

  #stopTimer(): void {
    this.#timer?.abort();
    this.#timer = undefined;
  }
}
