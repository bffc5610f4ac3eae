import { setTimeout as sleep } from 'node:timers/promises';
import { BackendUnavailableError } from '../errors.js';
import { retryIdempotent } from './api-retry.js';
import type { CreateContext, SandboxTransport } from './transport.js';

/** How long a failed start waits for the transport's create to settle before removing what it made. */
const START_SETTLE_MS = 5000;
/** Removal while the backend is unreachable: tries for about 25 s (an engine restart), then gives up to a later teardown() or sweep. */
const TEARDOWN_RETRY = { attempts: 7, initialMs: 500, maxMs: 8_000 };

/**
 * When the kit removes an environment's sandbox. The rule: a sandbox may exist from the moment the
 * transport's create() is called, unless that create failed and the transport says its creating
 * request was never sent or never reached the API (`createOutcome()`: 'not-attempted', 'refused').
 * Then there is nothing to remove, and an unreachable backend is not retried for it: a task that
 * found the daemon down reports at once instead of after ~25 s of removal retries. A create still
 * running, or whose request went out and whose answer was lost ('unknown', and any transport that
 * cannot tell), may have made one: it is removed, retried while the backend is unreachable, and
 * whatever is still left is found by its labels in a sweep.
 */
export class SandboxRemoval {
  readonly #transport: SandboxTransport;
  #create: 'not-called' | 'pending' | 'resolved' | 'rejected' = 'not-called';

  constructor(transport: SandboxTransport) {
    this.#transport = transport;
  }

  /** The transport's create, with a record of whether it was called and how it ended. */
  async create(ctx: CreateContext): Promise<void> {
    this.#create = 'pending';
    try {
      await this.#transport.create(ctx);
      this.#create = 'resolved';
    } catch (error) {
      this.#create = 'rejected';
      throw error;
    }
  }

  /** Whether a sandbox may exist, by the rule above. */
  get mayExist(): boolean {
    if (this.#create === 'not-called') return false;
    if (this.#create !== 'rejected') return true;
    const outcome = this.#transport.createOutcome?.() ?? 'unknown';
    return outcome === 'unknown' || outcome === 'created';
  }

  /**
   * The create may still be running after start() gave up: wait a little for it, remove what it
   * made, and if it is still running then, remove again once it settles, so nothing is left.
   */
  async afterFailedStart(work: Promise<void>): Promise<void> {
    let pending = true;
    const done = work.then(
      () => void (pending = false),
      () => void (pending = false),
    );
    const waited = new AbortController();
    await Promise.race([done, sleep(START_SETTLE_MS, undefined, { signal: waited.signal }).catch(() => undefined)]);
    waited.abort();
    if (!pending && !this.mayExist) return;
    await this.#transport.remove().catch(() => undefined);
    if (pending) void done.then(() => (this.mayExist ? this.#transport.remove().catch(() => undefined) : undefined));
  }

  /**
   * Teardown's removal, tried again while the backend is unreachable (an engine restarting or an
   * API briefly down would otherwise leave the sandbox behind). `map` puts native errors in
   * berth's terms. Resolves false when there was nothing to remove.
   */
  async remove(map: (error: unknown) => unknown, signal?: AbortSignal): Promise<boolean> {
    if (!this.mayExist) return false;
    const remove = () =>
      this.#transport.remove().catch((error: unknown) => {
        throw map(error);
      });
    await retryIdempotent(remove, (e) => (BackendUnavailableError.isInstance(e) ? {} : undefined), { policy: TEARDOWN_RETRY, ...(signal ? { signal } : {}) });
    return true;
  }
}
