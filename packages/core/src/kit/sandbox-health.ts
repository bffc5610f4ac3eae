import { setTimeout as sleep } from 'node:timers/promises';
import { BackendUnavailableError, BerthError, SandboxLostError, TaskFailure, type Operation } from '../errors.js';
import type { EnvironmentSpec } from '../spec.js';
import { describeMs } from './common-options.js';
import type { SandboxTransport } from './transport.js';

/** When a command was killed from outside, how long the backend may take to agree the sandbox died. */
export const LOSS_SETTLE_MS = 1000;

/** What the health record needs of its environment. */
export interface HealthHost {
  readonly id: string;
  readonly backend: string;
  readonly spec: EnvironmentSpec;
  readonly transport: SandboxTransport;
  /** teardown() was called: a sandbox removed by our own teardown is not lost. */
  closed(): boolean;
  /** The sandbox was found gone (once): the environment moves to 'lost' and says so. */
  onLost(reason: string): void;
}

/**
 * Whether one sandbox still lives, as its backend tells it, and how its end is named: lost (the
 * infrastructure's doing, a SandboxLostError) or out of lifetime (the task's, a TaskFailure
 * LifetimeExceeded naming whose lifetime it was).
 */
export class SandboxHealth {
  readonly #host: HealthHost;
  #lostReason: string | undefined;
  #lifetimeExceeded = false;
  /** The backend's default lifetime, when that (not the spec's) is what ran out. */
  #defaultLifetimeMs: number | undefined;

  constructor(host: HealthHost) {
    this.#host = host;
  }

  #ctx(operation: Operation) {
    return { operation, backend: this.#host.backend, environmentId: this.#host.id };
  }

  /** Why the sandbox is gone, once it is known to be. */
  get lostReason(): string | undefined {
    return this.#lostReason;
  }

  /** The kit ended the sandbox at its lifetime (a pooled sandbox's, counted from its claim). */
  expire(reason: string): void {
    this.#lifetimeExceeded = true;
    this.markLost(reason);
  }

  markLost(reason: string): void {
    if (this.#lostReason || this.#host.closed()) return;
    this.#lostReason = reason;
    this.#host.onLost(reason);
  }

  /** The error an operation gets from a sandbox that is gone. */
  lost(operation: Operation, reason: string, cause?: unknown): SandboxLostError | TaskFailure {
    // The sandbox ended because the task outlived timeouts.lifetimeMs: the task's doing, and a
    // retry would only run out of time again.
    if (this.#lifetimeExceeded) {
      return new TaskFailure({ ...this.#ctx(operation), kind: 'LifetimeExceeded', message: this.#lifetimeMessage(operation), cause });
    }
    const id = this.#host.id;
    return new SandboxLostError({ ...this.#ctx(operation), message: `sandbox ${id} was lost during ${operation}: ${reason}`, lastState: reason, cause });
  }

  /** Whose lifetime ran out: the spec's, or the backend's default (then the option that sets it). */
  #lifetimeMessage(operation: Operation): string {
    const { id, backend, spec } = this.#host;
    const own = spec.timeouts.lifetimeMs;
    if (own !== undefined) return `sandbox ${id} reached its lifetime of ${own} ms (timeouts.lifetimeMs) during ${operation}`;
    const byDefault = this.#defaultLifetimeMs;
    if (byDefault === undefined) return `sandbox ${id} reached its lifetime during ${operation}`;
    return (
      `sandbox ${id} reached the ${backend} backend's default lifetime of ${byDefault} ms (${describeMs(byDefault)}) during ${operation}: ` +
      'the spec sets no timeouts.lifetimeMs, so the backend option defaultLifetimeMs applied; ' +
      'for longer tasks raise defaultLifetimeMs, or give the spec its own timeouts.lifetimeMs'
    );
  }

  /**
   * Ask the backend whether the sandbox is still alive; marks it lost if not. `settleMs` polls a
   * little: when a sandbox is killed, its processes end a moment before the backend says so.
   */
  async checkAlive(operation: Operation, settleMs = 0, cause?: unknown): Promise<SandboxLostError | TaskFailure | undefined> {
    if (this.#lostReason) return this.lost(operation, this.#lostReason, cause);
    const transport = this.#host.transport;
    const deadline = Date.now() + settleMs;
    let asks = 0;
    for (;;) {
      let status;
      try {
        status = await transport.inspect();
      } catch (error) {
        throw BerthError.isInstance(error) ? error : (transport.mapError(error, operation) ?? error);
      }
      if (!status.running) {
        if (status.lifetimeExpired === true && !this.#lifetimeExceeded) {
          this.#lifetimeExceeded = true;
          this.#defaultLifetimeMs = status.defaultLifetimeMs;
        }
        this.markLost(status.reason);
        return this.lost(operation, status.reason, cause);
      }
      if (Date.now() >= deadline) return undefined;
      // Quick at first, then no more than 4 asks a second.
      await sleep(Math.min(250, 25 * 2 ** asks++));
    }
  }

  /** A failed call: mapped by the backend; a sandbox it says is gone is asked how it ended. */
  async mapError(error: unknown, operation: Operation): Promise<unknown> {
    const mapped = BerthError.isInstance(error) ? error : this.#host.transport.mapError(error, operation);
    if (mapped && SandboxLostError.isInstance(mapped)) {
      // A lifetime that ran out is not a loss: the backend's state says which. The call that found
      // the sandbox gone may come a moment before the state does (a command sent as a deadline
      // ends it): give the backend that moment to agree, as for a command killed from outside.
      const seen = await this.checkAlive(operation, LOSS_SETTLE_MS, error).catch(() => undefined);
      if (seen) return seen;
      this.markLost(mapped.lastState ?? 'gone');
      return mapped;
    }
    // An answer the backend could not place, or its API failing mid-call (an exec instance the
    // engine no longer knows): a sandbox that died under the call explains it, wherever in the call
    // it came. Asked once, with the same moment to agree; a live sandbox leaves the error as it was.
    if (!BerthError.isInstance(error) && (mapped === undefined || BackendUnavailableError.isInstance(mapped))) {
      const seen = await this.checkAlive(operation, 0, error).catch(() => undefined);
      if (seen) return seen;
    }
    return mapped ?? error;
  }
}
