import type { NetworkNotice } from '../contract.js';
import type { ResolvedAllowlist } from './allowlist-blocks.js';

/** Same blocks and same names with the same addresses, whatever the order the resolver gave them in. */
function same(a: ResolvedAllowlist, b: ResolvedAllowlist): boolean {
  const key = (r: ResolvedAllowlist) =>
    JSON.stringify([[...r.blocks].sort(), r.hosts.map((h) => [h.name, [...h.addresses].sort()]).sort((x, y) => String(x[0]).localeCompare(String(y[0])))]);
  return key(a) === key(b);
}

/**
 * An allowlist's hostnames resolved again every `everyMs` while the sandbox lives (for backends
 * that allow names by the addresses berth resolved): when they changed, `apply` rewrites what the
 * sandbox allows and resolves, and 'refreshed' is said; when resolving or applying fails, the
 * previous state stays in force, 'refresh-failed' is said, and the next round tries again. One
 * round at a time; stop() waits for a round in flight, so a switch never interleaves with one.
 */
export class AllowlistRefresh {
  readonly #everyMs: number;
  readonly #resolve: () => Promise<ResolvedAllowlist>;
  readonly #apply: (next: ResolvedAllowlist) => Promise<void>;
  readonly #notify: (notice: NetworkNotice) => void;
  #current: ResolvedAllowlist;
  #timer: NodeJS.Timeout | undefined;
  #round: Promise<void> | undefined;
  #stopped = false;

  constructor(
    current: ResolvedAllowlist,
    everyMs: number,
    resolve: () => Promise<ResolvedAllowlist>,
    apply: (next: ResolvedAllowlist) => Promise<void>,
    notify: (notice: NetworkNotice) => void,
  ) {
    this.#current = current;
    this.#everyMs = everyMs;
    this.#resolve = resolve;
    this.#apply = apply;
    this.#notify = notify;
    this.#schedule();
  }

  /** Whether an allowlist needs one: it has names, and refreshing is on. */
  static wanted(resolved: ResolvedAllowlist, everyMs: number): boolean {
    return everyMs > 0 && resolved.hosts.length > 0;
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#round = this.#once().finally(() => {
        this.#round = undefined;
        this.#schedule();
      });
    }, this.#everyMs);
    // A live sandbox's refresh must not keep the runner's process alive.
    this.#timer.unref();
  }

  async #once(): Promise<void> {
    try {
      const next = await this.#resolve();
      if (this.#stopped || same(next, this.#current)) return;
      await this.#apply(next);
      this.#current = next;
      this.#notify({ kind: 'refreshed', hosts: next.hosts });
    } catch (error) {
      if (!this.#stopped) this.#notify({ kind: 'refresh-failed', error: error instanceof Error ? error : new Error(String(error)) });
    }
  }

  /** No round after this; resolves once a round in flight has ended. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#round;
  }
}
