import { cancelledFrom } from '../abort.js';
import type { EnvironmentPool, EnvironmentSpec, PoolEvents, PoolStats } from '../contract.js';
import { CancelledError } from '../errors.js';
import { createEvents } from '../events.js';
import type { SandboxEnvironment } from './environment.js';

/** Idle sandboxes are checked against maxIdleMs this many times per maxIdleMs. */
const EXPIRY_CHECKS_PER_IDLE = 4;

interface Idle {
  env: SandboxEnvironment;
  readyAt: number;
}

interface Waiter {
  resolve: (env: SandboxEnvironment) => void;
  reject: (error: unknown) => void;
  since: number;
}

export interface SandboxPoolOptions {
  backend: string;
  spec: EnvironmentSpec;
  size: number;
  maxIdleMs: number;
  /** The most claims the pool will see (PoolOptions.maxClaims); undefined: no end. */
  maxClaims?: number;
  /** A new, not yet started environment of the pool's spec (pooled: its lifetime counts from claim). */
  make: () => SandboxEnvironment;
  /** PoolOptions.prepare: run once a sandbox started, before it is idle or handed to a claim. */
  prepare?: (env: SandboxEnvironment) => Promise<void>;
}

/**
 * The kit's warm pool. Policy, once for every backend: starts go through the environment's own
 * start (so the backend's creation limits and guardian apply); an idle sandbox is checked alive
 * with one status read at its claim and replaced if dead; a failed start goes to the oldest waiting
 * claim, and after one the pool refills only when claimed from (a pull that will keep failing does
 * not spin); idle sandboxes past maxIdleMs are replaced; close waits for starts in flight and
 * removes everything.
 */
export class SandboxPool implements EnvironmentPool {
  readonly backend: string;
  readonly spec: EnvironmentSpec;
  readonly size: number;
  readonly events = createEvents<PoolEvents>();
  readonly #options: SandboxPoolOptions;
  readonly #idle: Idle[] = [];
  readonly #waiters: Waiter[] = [];
  readonly #fills: Array<{ resolve: () => void; reject: (error: unknown) => void }> = [];
  /** Starts in flight, so close() can wait for them. */
  readonly #inFlight = new Set<Promise<void>>();
  /** Removals the pool started, so close() can wait for them. */
  readonly #removals = new Set<Promise<unknown>>();
  readonly #stats = { claimed: 0, failed: 0, expired: 0, dead: 0 };
  /** Idle sandboxes taken by a claim and being checked alive. */
  #checking = 0;
  /** After a failed start: refill only on a claim (or fill), not on its own. */
  #holding = false;
  #closed: Promise<void> | undefined;
  #expiryTimer: NodeJS.Timeout | undefined;

  constructor(options: SandboxPoolOptions) {
    this.#options = options;
    this.backend = options.backend;
    this.spec = options.spec;
    this.size = options.size;
  }

  get stats(): Readonly<PoolStats> {
    return { idle: this.#idle.length, starting: this.#inFlight.size, waiting: this.#waiters.length, ...this.#stats };
  }

  async claim(opts: { signal?: AbortSignal } = {}): Promise<SandboxEnvironment> {
    const ctx = { operation: 'start' as const, backend: this.backend };
    if (this.#closed) throw this.#closedError();
    if (opts.signal?.aborted) throw cancelledFrom(opts.signal, ctx);
    const since = Date.now();
    this.#holding = false;
    // Newest last: take the oldest idle one, the nearest to expiring.
    for (let entry = this.#idle.shift(); entry; entry = this.#idle.shift()) {
      // The alive check first, the refill after it: a start's own API calls would delay the check.
      // Counted as claimed meanwhile (maxClaims): the refill must not start one for this claim.
      this.#checking++;
      const alive = await entry.env.probe().finally(() => this.#checking--);
      if (alive) this.#stats.claimed++;
      this.#refill();
      if (alive) return this.#handOut(entry.env, since);
      this.#stats.dead++;
      this.#remove(entry.env, 'dead');
      if (this.#closed) throw this.#closedError();
    }
    const env = await new Promise<SandboxEnvironment>((resolve, reject) => {
      const waiter: Waiter = { resolve, reject, since };
      this.#waiters.push(waiter);
      opts.signal?.addEventListener(
        'abort',
        () => {
          const at = this.#waiters.indexOf(waiter);
          if (at >= 0) this.#waiters.splice(at, 1);
          reject(cancelledFrom(opts.signal!, ctx));
        },
        { once: true },
      );
      this.#refill();
    });
    return this.#handOut(env, since);
  }

  fill(opts: { signal?: AbortSignal } = {}): Promise<void> {
    if (this.#closed) return Promise.reject(this.#closedError());
    this.#holding = false;
    this.#refill();
    if (this.#idle.length >= Math.min(this.size, (this.#options.maxClaims ?? Number.POSITIVE_INFINITY) - this.#stats.claimed)) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const fill = { resolve, reject };
      this.#fills.push(fill);
      opts.signal?.addEventListener(
        'abort',
        () => {
          this.#fills.splice(this.#fills.indexOf(fill), 1);
          reject(cancelledFrom(opts.signal!, { operation: 'start', backend: this.backend }));
        },
        { once: true },
      );
    });
  }

  close(): Promise<void> {
    this.#closed ??= (async () => {
      clearInterval(this.#expiryTimer);
      for (const waiter of this.#waiters.splice(0)) waiter.reject(this.#closedError());
      for (const fill of this.#fills.splice(0)) fill.reject(this.#closedError());
      for (const entry of this.#idle.splice(0)) this.#remove(entry.env, 'closed');
      // A start in flight removes its own sandbox when it sees the pool closed.
      while (this.#inFlight.size > 0 || this.#removals.size > 0) await Promise.allSettled([...this.#inFlight, ...this.#removals]);
    })();
    return this.#closed;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #closedError(): CancelledError {
    return new CancelledError({ operation: 'start', backend: this.backend, message: `the ${this.backend} warm pool was closed; claim from an open pool` });
  }

  /** A sandbox to its claim (already counted in stats.claimed where the claim got it). */
  #handOut(env: SandboxEnvironment, since: number): SandboxEnvironment {
    env.claimed();
    this.events.emit('claimed', env.id, Date.now() - since);
    return env;
  }

  #refill(): void {
    while (!this.#closed && !this.#holding && this.#idle.length + this.#inFlight.size < this.#wanted()) this.#startOne();
  }

  /** Sandboxes to have idle or starting: size ahead of the waiting claims, never more than claims still to come, always one per waiting claim. */
  #wanted(): number {
    const ahead = this.size + this.#waiters.length;
    const max = this.#options.maxClaims;
    return max === undefined ? ahead : Math.max(this.#waiters.length, Math.min(ahead, max - this.#stats.claimed - this.#checking));
  }

  #startOne(): void {
    const env = this.#options.make();
    const prepare = this.#options.prepare;
    const started: Promise<void> = (prepare ? env.start().then(() => prepare(env)) : env.start()).then(
      () => {
        this.#inFlight.delete(started);
        if (this.#closed) return void this.#remove(env, 'closed');
        const waiter = this.#waiters.shift();
        if (waiter) {
          // Claimed now, before the refill below counts what is still to come (maxClaims).
          this.#stats.claimed++;
          waiter.resolve(env);
        } else {
          this.#idle.push({ env, readyAt: Date.now() });
          this.events.emit('ready', env.id);
          this.#armExpiry();
          this.#settleFills();
        }
        this.#refill();
      },
      (error: unknown) => {
        this.#inFlight.delete(started);
        this.#stats.failed++;
        this.#track(env.teardown());
        if (this.#closed) return;
        this.#holding = true;
        this.events.emit('failed', error);
        this.#waiters.shift()?.reject(error);
        for (const fill of this.#fills.splice(0)) fill.reject(error);
        // Claims still waiting keep their starts: one start per waiter beyond what is in flight.
        if (this.#waiters.length > this.#inFlight.size) this.#startOne();
      },
    );
    this.#inFlight.add(started);
  }

  #settleFills(): void {
    const max = this.#options.maxClaims;
    if (this.#idle.length < (max === undefined ? this.size : Math.min(this.size, max - this.#stats.claimed))) return;
    for (const fill of this.#fills.splice(0)) fill.resolve();
  }

  #remove(env: SandboxEnvironment, reason: 'expired' | 'dead' | 'closed'): void {
    this.#track(env.teardown().then(() => this.events.emit('removed', env.id, reason)));
  }

  /** A removal close() waits for; its failure is the sweep's to clean up (the sandbox carries berth's labels). */
  #track(removal: Promise<unknown>): void {
    const tracked = removal.catch(() => undefined);
    this.#removals.add(tracked);
    void tracked.finally(() => this.#removals.delete(tracked));
  }

  /** Replace idle sandboxes past maxIdleMs; the check runs only while some are idle. */
  #armExpiry(): void {
    if (this.#expiryTimer) return;
    const every = Math.max(50, Math.floor(this.#options.maxIdleMs / EXPIRY_CHECKS_PER_IDLE));
    this.#expiryTimer = setInterval(() => {
      const now = Date.now();
      for (let i = this.#idle.length - 1; i >= 0; i--) {
        const entry = this.#idle[i]!;
        if (now - entry.readyAt < this.#options.maxIdleMs) continue;
        this.#idle.splice(i, 1);
        this.#stats.expired++;
        this.#remove(entry.env, 'expired');
      }
      if (this.#idle.length === 0) {
        clearInterval(this.#expiryTimer);
        this.#expiryTimer = undefined;
      }
      this.#refill();
    }, every);
    this.#expiryTimer.unref();
  }
}
