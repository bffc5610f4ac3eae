import type { EnvironmentEvents } from '../contract.js';
import type { TypedEvents } from '../events.js';

/** An event of a pooled sandbox's start, kept for whoever claims it: its name and arguments. */
export type StartupEvent = [name: 'phase' | 'pull' | 'build', args: unknown[]];

/** A start's events kept at most (a long build's log is cut there). */
const MAX_STARTUP_EVENTS = 2000;

/**
 * A pooled sandbox's start as its events told it (phases, pull and build progress), kept until its
 * claim: whoever claims it subscribed too late to hear them, and replays them from here.
 */
export class StartupLog {
  readonly #kept: StartupEvent[] = [];
  #open = true;

  constructor(events: TypedEvents<EnvironmentEvents>) {
    for (const name of ['phase', 'pull', 'build'] as const) {
      events.on(name, (...args: unknown[]) => {
        if (this.#open && this.#kept.length < MAX_STARTUP_EVENTS) this.#kept.push([name, args]);
      });
    }
  }

  /** The claim: what follows, the claimer hears itself. */
  close(): void {
    this.#open = false;
  }

  get events(): readonly StartupEvent[] {
    return this.#kept;
  }
}
