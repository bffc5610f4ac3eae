import type { AttemptRecord, OutagePauseOptions } from './types.js';

const DEFAULT_OUTAGE: Required<OutagePauseOptions> = { initialMs: 1000, maxMs: 30_000 };

/**
 * When the backend itself is down (its API unreachable: BackendUnavailableError), every attempt
 * fails at once, each freeing its slot for the next, and a run of 300 tasks burns every task's
 * attempts in the seconds the engine takes to restart. The gate holds new attempts back after
 * such a failure, for a pause that doubles while the outage lasts and resets when an attempt ends
 * any other way. Attempts already running go on; the failed task still gets its own backoff.
 */
export class OutageGate {
  readonly #initialMs: number;
  readonly #maxMs: number;
  readonly #enabled: boolean;
  #pauseMs = 0;
  #until = 0;

  constructor(options: OutagePauseOptions | false | undefined) {
    this.#enabled = options !== false;
    const resolved = { ...DEFAULT_OUTAGE, ...(options || {}) };
    this.#initialMs = resolved.initialMs;
    this.#maxMs = resolved.maxMs;
  }

  /** After an attempt ended: returns the new pause when it opened the gate (or made it longer). */
  observe(record: AttemptRecord, now: number): number | undefined {
    if (!this.#enabled || record.failure?.stoppedBy) return undefined;
    if (record.failure?.type !== 'BackendUnavailableError') {
      // Only an attempt begun after the last pause says the backend is back; one begun before the
      // outage may well end fine.
      if (record.startedAt >= this.#until) this.#pauseMs = 0;
      return undefined;
    }
    // Attempts that were already running when the outage began all fail together: one step each time the gate reopens.
    if (now < this.#until) return undefined;
    this.#pauseMs = this.#pauseMs === 0 ? this.#initialMs : Math.min(this.#maxMs, this.#pauseMs * 2);
    this.#until = now + this.#pauseMs;
    return this.#pauseMs;
  }

  /** How long new attempts must still wait. */
  waitMs(now: number): number {
    return Math.max(0, this.#until - now);
  }
}
