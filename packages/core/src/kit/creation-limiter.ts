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

interface Waiter {
  grant(): void;
}

/**
 * Bounds sandbox creation per backend instance: Modal limits creation to a few per second and
 * Kubernetes API servers throttle, so a runner starting 500 sandboxes at once must queue here
 * rather than be refused there. Waiters are served in order; an aborted waiter leaves the queue.
 */
export class CreationLimiter {
  readonly #max: number;
  readonly #intervalMs: number;
  readonly #clock: Clock;
  readonly #queue: Waiter[] = [];
  #active = 0;
  #nextStartAt = 0;

  constructor(limits: CreationLimits = {}, clock: Clock = systemClock) {
    for (const key of ['maxConcurrent', 'perSecond'] as const) {
      const value = limits[key];
      if (value !== undefined && !(value > 0)) {
        throw new ConfigError({ operation: 'config', path: `creation.${key}`, message: `creation.${key} must be a positive number, got ${value}` });
      }
    }
    this.#max = limits.maxConcurrent ?? Infinity;
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

  /**
   * Run `create` when the limits allow; `onWait` is told when it has to wait. Rejects with the
   * signal's reason if it fires while waiting or creating: a create that hangs gives its slot back
   * when its caller gives up on it.
   */
  async run<T>(create: () => Promise<T>, signal?: AbortSignal, onWait?: () => void): Promise<T> {
    if (onWait && (this.#active >= this.#max || this.#nextStartAt > this.#clock.now())) onWait();
    await this.#slot(signal);
    try {
      await this.#pace(signal);
      return await (signal ? raceAbort(create(), signal) : create());
    } finally {
      this.#release();
    }
  }

  #slot(signal: AbortSignal | undefined): Promise<void> {
    signal?.throwIfAborted();
    if (this.#active < this.#max) {
      this.#active++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        this.#queue.splice(this.#queue.indexOf(waiter), 1);
        reject(signal!.reason);
      };
      const waiter: Waiter = {
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#queue.push(waiter);
    });
  }

  /** The slot passes straight to the next waiter, so a newcomer cannot overtake the queue. */
  #release(): void {
    const next = this.#queue.shift();
    if (next) next.grant();
    else this.#active--;
  }

  async #pace(signal: AbortSignal | undefined): Promise<void> {
    if (this.#intervalMs === 0) return;
    const now = this.#clock.now();
    const at = Math.max(now, this.#nextStartAt);
    this.#nextStartAt = at + this.#intervalMs;
    if (at > now) await this.#clock.sleep(at - now, signal);
  }
}
