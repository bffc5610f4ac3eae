// Time, for the kit (API retries, creation limits) and the trial runner alike: one place both import.
import { setTimeout as sleep } from 'node:timers/promises';

/** Time, injectable so tests are deterministic. */
export interface Clock {
  now(): number;
  /** Resolves after ms, or rejects with the signal's reason when it aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

function abortError(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('The operation was aborted', 'AbortError');
}

/** Wall-clock time and real timers. A sleep cut short rejects with the signal's own reason. */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    sleep(Math.max(0, ms), undefined, signal ? { signal } : {}).catch((error: unknown) => {
      throw signal?.aborted ? abortError(signal) : error;
    }),
};

interface Timer {
  at: number;
  seq: number;
  resolve: () => void;
}

/**
 * Discrete-event time for deterministic tests: sleeping takes no real time. Whenever every pending
 * promise chain has run (a macrotask boundary), the earliest timer fires and the clock jumps to its
 * time, so runs with backoffs, deadlines and "slow" trials finish instantly and identically every
 * time. Ties fire in the order the sleeps were made.
 */
export class VirtualClock implements Clock {
  #now: number;
  #seq = 0;
  #timers: Timer[] = [];
  #scheduled = false;

  constructor(start = 0) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(abortError(signal));
      const timer: Timer = {
        at: this.#now + Math.max(0, ms),
        seq: this.#seq++,
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        this.#timers = this.#timers.filter((t) => t !== timer);
        reject(abortError(signal!));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#timers.push(timer);
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      if (this.#timers.length === 0) return;
      this.#timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.#timers.shift()!;
      this.#now = Math.max(this.#now, next.at);
      next.resolve();
      if (this.#timers.length > 0) this.#schedule();
    });
  }
}
