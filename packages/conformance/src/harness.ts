import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BerthError, pooled, type Backend, type Environment, type EnvironmentPool, type EnvironmentSpecInput, type PooledBackend } from '@berth/core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { CaseNeed, ConformanceOptions } from './options.js';
import { capabilityGap } from './requirements.js';

/** A BerthError class (or anything with a branded `isInstance`), for typed expectations. */
export interface ErrorKind<T> {
  readonly name: string;
  isInstance(error: unknown): error is T;
}

export interface CaseDefinition {
  /** Stable id, shown in the title: `[exec.argv] ...`. */
  id: string;
  title: string;
  needs?: readonly CaseNeed[];
  /**
   * Called while the suite is collected: a string is the reason this backend cannot run the case
   * (a capability it does not claim); the case is then registered as skipped with that reason.
   */
  unsupported?: () => string | undefined;
  /** Before timeoutScale. Default 30 s. */
  timeoutMs?: number;
  run: () => Promise<void>;
}

/** An environment started once for a group of read-only cases. */
export interface SharedEnvironment {
  readonly env: Environment;
}

const DEFAULT_CASE_TIMEOUT = 30_000;
const DEFAULT_HOOK_TIMEOUT = 120_000;

export function describeError(error: unknown): string {
  if (BerthError.isInstance(error)) {
    return `${error.name} (type ${error.type}, category ${error.category}, backend ${String(error.backend)}): ${error.message}`;
  }
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}

export function uniqueName(prefix: string): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * State shared by every case of one suite run: the backend, a registry of started environments
 * (all torn down in afterAll even when a case fails half-way), temporary local directories and
 * every error a case saw rejected (checked again, together, at the end).
 */
export class Harness {
  readonly options: ConformanceOptions;
  readonly scale: number;
  readonly caseIds: string[] = [];
  readonly skipped: Array<{ id: string; reason: string }> = [];
  /** Cases that ran without one of their checks (its need unmet): said in the summary, never silent. */
  readonly partial: Array<{ id: string; reason: string }> = [];
  /** Every error a case expected and received, for the taxonomy checks at the end. */
  readonly errors: BerthError[] = [];
  #backend: Backend | undefined;
  #raw: Backend | undefined;
  #pooled: PooledBackend | undefined;
  readonly #envs = new Set<Environment>();
  readonly #tempDirs: string[] = [];

  constructor(options: ConformanceOptions) {
    this.options = options;
    this.scale = options.timeoutScale && options.timeoutScale > 0 ? options.timeoutScale : 1;
  }

  get name(): string {
    return this.options.name;
  }

  /**
   * The backend the cases use, made on first use (the factory promises to do no I/O): with
   * `options.pool`, the backend through warm pools (`pooled()`), so every case's sandbox is a claimed one.
   */
  backend(): Backend {
    if (!this.#backend) {
      const raw = this.rawBackend();
      this.#pooled = this.options.pool ? pooled(raw, this.options.pool) : undefined;
      this.#backend = this.#pooled ?? raw;
    }
    return this.#backend;
  }

  /** The backend itself, never through pools (the pool cases make their own). */
  rawBackend(): Backend {
    this.#raw ??= this.options.createBackend();
    return this.#raw;
  }

  /** The warm pools of a pooled run made so far (none without `options.pool`), for cases that must tell their idle sandboxes from leftovers. */
  pools(): EnvironmentPool[] {
    return [...(this.#pooled?.pools.values() ?? [])];
  }

  /** Close the pools of a pooled run (their idle sandboxes are removed); nothing without `options.pool`. */
  async closePools(): Promise<void> {
    await this.#pooled?.close();
  }

  /** A duration scaled by timeoutScale. */
  ms(base: number): number {
    return Math.round(base * this.scale);
  }

  /**
   * This session's labelled resources still there, or undefined where the options give no way to
   * list them: the case then runs without its leftover check, and the suite's summary says so.
   */
  async leftovers(caseId: string): Promise<string[] | undefined> {
    const list = this.options.faults?.listLeftovers;
    if (list) return list();
    if (!this.partial.some((p) => p.id === caseId))
      this.partial.push({ id: caseId, reason: 'nothing left behind not checked: needs options.faults.listLeftovers' });
    return undefined;
  }

  has(need: CaseNeed): boolean {
    const { faults, images } = this.options;
    switch (need) {
      case 'faults.kill':
        return typeof faults?.kill === 'function';
      case 'faults.killService':
        return typeof faults?.killService === 'function';
      case 'faults.forgetImage':
        return typeof faults?.forgetImage === 'function';
      case 'faults.listLeftovers':
        return typeof faults?.listLeftovers === 'function';
      case 'images.private':
        return images.private !== undefined;
      case 'images.missing':
        return typeof images.missing === 'string' && images.missing.length > 0;
    }
  }

  /** The basic image, specDefaults and `input` merged (env and labels merged key by key). */
  spec(input: Partial<EnvironmentSpecInput> = {}): EnvironmentSpecInput {
    const defaults = this.options.specDefaults ?? {};
    return {
      image: this.options.images.basic,
      ...defaults,
      ...input,
      env: { ...defaults.env, ...input.env },
      labels: { ...defaults.labels, ...input.labels },
    };
  }

  // ----------------------------------------------------------------------------- environments

  /** Remember an environment so that afterAll tears it down whatever happens to the case. */
  track<E extends Environment>(env: E): E {
    this.#envs.add(env);
    return env;
  }

  /** Start a tracked environment; a failed start is torn down before the error is rethrown. */
  async start(input: Partial<EnvironmentSpecInput> = {}): Promise<Environment> {
    const env = this.track(this.backend().environment(this.spec(input)));
    try {
      await env.start();
    } catch (error) {
      await this.release(env).catch(() => undefined);
      throw error;
    }
    return env;
  }

  /** Tear an environment down and forget it (kept for afterAll if teardown failed). */
  async release(env: Environment): Promise<void> {
    await env.teardown();
    this.#envs.delete(env);
  }

  /** A fresh environment for one destructive case, torn down when `fn` ends, passed or failed. */
  async withEnv<T>(input: Partial<EnvironmentSpecInput>, fn: (env: Environment) => Promise<T>): Promise<T> {
    const env = await this.start(input);
    try {
      return await fn(env);
    } finally {
      await this.release(env);
    }
  }

  /** Tear down everything still tracked. Returns the errors teardown raised (it should raise none). */
  async releaseAll(): Promise<unknown[]> {
    const failures: unknown[] = [];
    await Promise.all(
      [...this.#envs].map(async (env) => {
        try {
          await this.release(env);
        } catch (error) {
          failures.push(error);
        }
      }),
    );
    return failures;
  }

  /**
   * Start one environment in beforeAll of the enclosing describe and tear it down in its afterAll.
   * Only for cases that leave it usable (no kills, no timeouts that might damage it).
   */
  sharedEnv(input: Partial<EnvironmentSpecInput> = {}): SharedEnvironment {
    let env: Environment | undefined;
    beforeAll(async () => {
      env = await this.start(input);
    }, this.ms(DEFAULT_HOOK_TIMEOUT));
    afterAll(async () => {
      if (env) await this.release(env);
    }, this.ms(DEFAULT_HOOK_TIMEOUT));
    return {
      get env(): Environment {
        if (!env) throw new Error('the shared environment of this group did not start (see the beforeAll failure)');
        return env;
      },
    };
  }

  // ----------------------------------------------------------------------------- local files

  async tempDir(label = 'tmp'): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), `berth-conformance-${label}-`));
    this.#tempDirs.push(dir);
    return dir;
  }

  async removeTempDirs(): Promise<void> {
    const dirs = this.#tempDirs.splice(0);
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  }

  // ----------------------------------------------------------------------------- errors

  /**
   * Await `operation` (a promise, or a function whose synchronous throw also counts), expect it to
   * reject with a BerthError naming this backend, and, when `kind` is given, of that kind.
   */
  async expectBerthError<T extends BerthError = BerthError>(operation: Promise<unknown> | (() => unknown), kind?: ErrorKind<T>): Promise<T> {
    let error: unknown;
    let rejected = false;
    try {
      await (typeof operation === 'function' ? operation() : operation);
    } catch (caught) {
      rejected = true;
      error = caught;
    }
    expect(rejected, `expected the operation to fail${kind ? ` with ${kind.name}` : ''}, but it succeeded`).toBe(true);
    expect(BerthError.isInstance(error), `expected a BerthError, got ${describeError(error)}`).toBe(true);
    const berth = error as BerthError;
    this.errors.push(berth);
    // Soft: a missing `backend` must not hide what the rest of the case checks.
    expect.soft(berth.backend, `error.backend of ${describeError(berth)}`).toBe(this.name);
    if (kind) expect(kind.isInstance(error), `expected ${kind.name}, got ${describeError(error)}`).toBe(true);
    return berth as T;
  }

  /**
   * backend.start(spec) that must fail with `kind`. Should it start after all, the environment is
   * tracked, so afterAll still tears it down.
   */
  expectStartFailure<T extends BerthError>(spec: EnvironmentSpecInput, kind: ErrorKind<T>): Promise<T> {
    return this.expectBerthError(
      this.backend()
        .start(spec)
        .then((env) => this.track(env)),
      kind,
    );
  }

  // ----------------------------------------------------------------------------- cases

  /** Register a case: an `it`, or an `it.skip` whose title says why when a need is not met. */
  defineCase(def: CaseDefinition): void {
    if (this.caseIds.includes(def.id)) throw new Error(`duplicate conformance case id ${def.id}`);
    this.caseIds.push(def.id);
    const title = `[${def.id}] ${def.title}`;
    const listed = this.options.skip?.[def.id];
    if (listed !== undefined) {
      const reason = `options.skip: ${listed}`;
      this.skipped.push({ id: def.id, reason });
      it.skip(`${title} (skipped: ${reason})`, () => undefined);
      return;
    }
    const missing = (def.needs ?? []).filter((need) => !this.has(need));
    const backend = this.backend();
    const unsupported = missing.length === 0 ? (capabilityGap(def.id, backend.capabilities, backend.hints) ?? def.unsupported?.()) : undefined;
    if (missing.length > 0 || unsupported !== undefined) {
      const reason = unsupported ?? `needs ${missing.join(', ')}`;
      this.skipped.push({ id: def.id, reason });
      it.skip(`${title} (skipped: ${reason})`, () => undefined);
      return;
    }
    it(title, def.run, this.ms(def.timeoutMs ?? DEFAULT_CASE_TIMEOUT));
  }

  hookTimeout(): number {
    return this.ms(DEFAULT_HOOK_TIMEOUT);
  }
}
