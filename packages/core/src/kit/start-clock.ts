import { performance } from 'node:perf_hooks';
import type { EnvironmentEvents } from '../contract.js';
import type { TypedEvents } from '../events.js';
import type { StartMark, StartTimings } from '../start-timings.js';
import type { SandboxTransport } from './transport.js';

/**
 * One environment's start telemetry (Environment.startTimings): the moment start() was called,
 * then each mark once, its first time, as an offset on a monotonic clock (a wall clock stepped by
 * NTP mid-start would make phases negative). Each new mark is told on the `reached` event.
 */
export class StartClock {
  readonly #events: TypedEvents<EnvironmentEvents>;
  #requestedAt = 0;
  #t0 = 0;
  #marks: Partial<Record<StartMark, number>> | undefined;

  constructor(events: TypedEvents<EnvironmentEvents>) {
    this.#events = events;
  }

  /** start() was called: the clock starts (once). */
  begin(): void {
    if (this.#marks) return;
    this.#requestedAt = Date.now();
    this.#t0 = performance.now();
    this.#marks = { requested: 0 };
    if (this.#events.listenerCount('reached') > 0) this.#events.emit('reached', 'requested', this.timings!);
  }

  /** A mark reached; again, or before begin(): ignored. `firstCommand` counts only once the sandbox ran. */
  reach(mark: StartMark): void {
    const marks = this.#marks;
    if (!marks || marks[mark] !== undefined) return;
    if (mark === 'firstCommand' && marks.running === undefined) return;
    marks[mark] = Math.round(performance.now() - this.#t0);
    if (this.#events.listenerCount('reached') > 0) this.#events.emit('reached', mark, this.timings!);
  }

  has(mark: StartMark): boolean {
    return this.#marks?.[mark] !== undefined;
  }

  /** A copy: what a caller keeps does not change under it. Undefined before start(). */
  get timings(): StartTimings | undefined {
    return this.#marks ? { requestedAt: this.#requestedAt, marks: { ...this.#marks } } : undefined;
  }
}

/**
 * The transport as the kit's exec, transfers and tree killer use it, telling `onSpawned` each time
 * a process started (for the `firstCommand` mark). Everything else is the transport's own (a Proxy:
 * transports are classes with private fields, so their methods stay bound to them).
 */
export function observeSpawns(transport: SandboxTransport, onSpawned: () => void): SandboxTransport {
  const spawn: SandboxTransport['spawn'] = async (request) => {
    const process = await transport.spawn(request);
    onSpawned();
    return process;
  };
  return new Proxy(transport, {
    get(target, key) {
      if (key === 'spawn') return spawn;
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
