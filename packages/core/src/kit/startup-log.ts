import type { EnvironmentEvents, StartupEvent } from '../contract.js';
import type { TypedEvents } from '../events.js';

/** A start's events kept at most (a long build's log is cut there). */
const MAX_STARTUP_EVENTS = 2000;

/**
 * A pooled sandbox's start as its events told it (pull and build progress), kept until its claim:
 * whoever claims it subscribed too late to hear them, and replays them from here.
 */
export class StartupLog {
  readonly #kept: StartupEvent[] = [];
  #open = true;

  constructor(events: TypedEvents<EnvironmentEvents>) {
    const keep = (event: StartupEvent) => {
      if (this.#open && this.#kept.length < MAX_STARTUP_EVENTS) this.#kept.push(event);
    };
    events.on('pull', (progress) => keep({ name: 'pull', progress }));
    events.on('build', (progress) => keep({ name: 'build', progress }));
  }

  /** The claim: what follows, the claimer hears itself. */
  close(): void {
    this.#open = false;
  }

  get events(): readonly StartupEvent[] {
    return this.#kept;
  }
}
