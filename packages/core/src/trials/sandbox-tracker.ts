import type { Environment, EnvironmentPhase } from '../contract.js';
import { redactSecrets } from '../redact.js';
import type { AttemptSandboxes, TrialSandboxes } from './types.js';

/** How a tracked environment's teardown ended: something removed, nothing to remove, or an error. */
type Ending = 'removed' | 'nothing-to-remove' | { error: string };

interface Tracked {
  env: Environment;
  /** The last 'stopped' phase the environment reported, with its detail. */
  stopped?: { detail: string | undefined };
  ending?: Ending;
  unwatch: () => void;
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
 * Created or not is the backend's own answer, read from the Environment contract: a teardown that
 * found nothing to remove reports the 'stopped' phase with a detail saying so (the kit's rule: the
 * request that makes the sandbox was never sent, or never reached the backend), one that removed
 * something reports it without one, and one that failed had something to remove (with nothing to
 * remove a teardown cannot fail). That detail exists only in the event, so a tracked environment
 * is watched from `track()` on: one the trial tore down with `env.teardown()` itself is still
 * counted right when the run settles it. An Environment that reports no 'stopped' phase (one not
 * made by the backend kit) counts as created once its teardown resolves.
 */
export class SandboxTracker implements TrialSandboxes {
  readonly #tracked = new Map<Environment, Tracked>();

  track(env: Environment): void {
    if (this.#tracked.has(env)) return;
    const entry: Tracked = { env, unwatch: () => undefined };
    const onPhase = (phase: EnvironmentPhase, detail?: string) => {
      if (phase === 'stopped') entry.stopped = { detail };
    };
    env.events.on('phase', onPhase);
    entry.unwatch = () => env.events.off('phase', onPhase);
    this.#tracked.set(env, entry);
  }

  async teardown(env: Environment, opts: { signal?: AbortSignal } = {}): Promise<void> {
    this.track(env);
    const entry = this.#tracked.get(env)!;
    try {
      await env.teardown(opts);
    } catch (error) {
      entry.ending = { error: teardownMessage(error) };
      throw error;
    }
    // A second teardown of a removed sandbox resolves without reporting again: the first one's answer stands.
    entry.ending = entry.stopped?.detail !== undefined ? 'nothing-to-remove' : 'removed';
  }

  /**
   * The attempt is over: tear down what the trial tracked and left up (so an attempt never leaks
   * by omission; one whose teardown failed is not tried again here, the backend already retried
   * it), stop watching, and return the accounting; undefined when nothing was tracked.
   */
  async settle(): Promise<AttemptSandboxes | undefined> {
    for (const entry of this.#tracked.values()) {
      if (!entry.ending) await this.teardown(entry.env).catch(() => undefined);
      entry.unwatch();
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
}
