import { classifyFailure } from '@berth/core';

/** How long one step of an attempt took, and how it ended. */
export interface StepTiming {
  /** 'start', 'upload solution', 'agent', 'upload tests', 'verifier', 'download verifier logs', 'teardown'... */
  name: string;
  /** Milliseconds from the attempt's start to this step's start. */
  offsetMs: number;
  durationMs: number;
  /**
   * How the step ended: 'completed' (for a command: it exited, whatever its exit code), 'timed_out'
   * (a command berth killed at its timeout), or 'threw' (the step failed; see errorType).
   */
  ended: 'completed' | 'timed_out' | 'threw';
  /** For a command: its exit code and whether it timed out. */
  exitCode?: number;
  timedOut?: boolean;
  /** For a failed step: the classified error type (the full chain is in result.json's failure). */
  errorType?: string;
}

/**
 * Times the steps of one attempt. A step that throws is recorded (with its error type) before the
 * error goes on, so result.json shows where a failed attempt stopped and how long it had run.
 */
export class StepTimer {
  readonly steps: StepTiming[];
  readonly #t0: number;
  readonly #prefix: string;

  constructor(t0 = performance.now(), steps: StepTiming[] = [], prefix = '') {
    this.#t0 = t0;
    this.steps = steps;
    this.#prefix = prefix;
  }

  /** A timer whose steps go into the same list, named `<prefix>: <name>` (a multi-step task's step). */
  scoped(prefix: string): StepTimer {
    return new StepTimer(this.#t0, this.steps, `${this.#prefix}${prefix}: `);
  }

  async run<T>(name: string, fn: () => Promise<T>, describe?: (result: T) => Partial<StepTiming>): Promise<T> {
    const started = performance.now();
    const step: StepTiming = { name: `${this.#prefix}${name}`, offsetMs: round(started - this.#t0), durationMs: 0, ended: 'threw' };
    this.steps.push(step);
    try {
      const result = await fn();
      if (describe) Object.assign(step, describe(result));
      step.ended = step.timedOut ? 'timed_out' : 'completed';
      return result;
    } catch (error) {
      step.errorType = classifyFailure(error).type;
      throw error;
    } finally {
      step.durationMs = round(performance.now() - started);
    }
  }
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}
