import type { Environment } from '../contract.js';
import { redactSecrets } from '../redact.js';
import type { AttemptSandboxes, AttemptStart, TrialSandboxes } from './types.js';

/** How a tracked environment's teardown ended: something removed, nothing to remove, or an error. */
type Ending = 'removed' | 'nothing-to-remove' | { error: string };

interface Tracked {
  env: Environment;
  ending?: Ending;
}

/** A teardown error as a report may carry it: its message, never a secret. */
function teardownMessage(error: unknown): string {
  return redactSecrets(error instanceof Error ? error.message : String(error));
}

/**
 * One attempt's sandbox accounting (TrialContext.sandboxes): which of its environments were
 * created, which a teardown removed, which it could not, and why. runTrials makes one per attempt
 * and journals what `settle()` returns with the attempt's record, so a resumed run keeps the
 * counts of the attempts it reuses.
 *
 * Created or not is the backend's own answer: `teardown()` resolves `{ removed: false }` when there
 * was nothing to remove (the request that makes the sandbox was never sent, or never reached the
 * backend). One that failed had something to remove (with nothing to remove a teardown cannot fail).
 */
export class SandboxTracker implements TrialSandboxes {
  readonly #tracked = new Map<Environment, Tracked>();

  track(env: Environment): void {
    if (!this.#tracked.has(env)) this.#tracked.set(env, { env });
  }

  async teardown(env: Environment, opts: { signal?: AbortSignal } = {}): Promise<void> {
    this.track(env);
    const entry = this.#tracked.get(env)!;
    try {
      const { removed } = await env.teardown(opts);
      entry.ending = removed ? 'removed' : 'nothing-to-remove';
    } catch (error) {
      entry.ending = { error: teardownMessage(error) };
      throw error;
    }
  }

  /**
   * The attempt is over: tear down what the trial tracked and left up (so an attempt never leaks
   * by omission; one whose teardown failed is not tried again here, the backend already retried
   * it), and return the accounting; undefined when nothing was tracked.
   */
  async settle(): Promise<AttemptSandboxes | undefined> {
    for (const entry of this.#tracked.values()) {
      if (!entry.ending) await this.teardown(entry.env).catch(() => undefined);
    }
    if (this.#tracked.size === 0) return undefined;
    const account: AttemptSandboxes = { created: 0, removed: 0, notRemoved: [] };
    for (const { env, ending } of this.#tracked.values()) {
      if (ending === 'nothing-to-remove') continue;
      account.created++;
      if (ending === 'removed') account.removed++;
      else account.notRemoved.push({ id: env.id, backend: env.backend, error: ending?.error ?? 'not torn down' });
    }
    return account;
  }

  /** The tracked environments' starts (Environment.startTimings), in the order tracked; those never started are left out. */
  starts(): AttemptStart[] {
    const starts: AttemptStart[] = [];
    for (const { env } of this.#tracked.values()) {
      const timings = env.startTimings;
      if (timings) starts.push({ id: env.id, backend: env.backend, timings });
    }
    return starts;
  }
}
