import {
  SPECIFICATION_VERSION,
  type Backend,
  type Capabilities,
  type Environment,
  type EnvironmentSpec,
  type EnvironmentSpecInput,
  type EnvironmentPool,
  type PoolOptions,
  type PreflightCheck,
  type PreflightReport,
  type SweepOptions,
  type SweepReport,
} from '../contract.js';
import { newEnvironmentId } from '../labels.js';
import { parseEnvironmentSpec } from '../spec.js';
import { preflightFailure, preflightSpec, startAndCleanUp } from './backend-helpers.js';
import { assertSupported, type CapabilityHints } from './capabilities.js';
import type { CommonBackendOptions } from './common-options.js';
import { CreationLimiter, type CreationLimits } from './creation-limiter.js';
import { SandboxEnvironment } from './environment.js';
import { Guardian, type GuardianTarget } from './guardian.js';
import { poolOptions } from './pool-options.js';
import { SandboxPool } from './sandbox-pool.js';
import { Sweep, type SweepTarget } from './sweep-rule.js';
import type { TransferMode } from './transfers.js';
import type { SandboxTransport } from './transport.js';

/** Removals a sweep runs at once unless the backend says otherwise. */
const SWEEP_CONCURRENCY = 16;

/** One resource a backend manages, as its API lists it: the sweep loop decides whether it goes. */
export interface ManagedResource extends SweepTarget {
  /** Its labels (or tags): the sweep rule reads the owner and the creation time from them. */
  labels: Readonly<Record<string, string | undefined>>;
  /** The backend's own record of when it was made (ms since epoch), used if the label is missing. */
  createdAtMs?: number;
}

/**
 * What a backend supplies: its engine's API, nothing else. The kit owns `environment()` (parse,
 * capability check, id, the lifecycle), `start()`, the preflight skeleton (API, spec, what the
 * spec needs) and the sweep loop (the owner rule, dry runs, `ownedByThisProcess`).
 */
export interface BackendDefinition {
  name: string;
  capabilities: Capabilities;
  /** What to do instead, per refused capability, for CapabilityError messages. */
  hints?: CapabilityHints;
  /** The options every backend shares (namePrefix, labels, creation limits...). */
  options: CommonBackendOptions;
  /** Creation limits when options.creation is unset; omitted: no limit. */
  defaultCreation?: CreationLimits;
  /** How files move; default 'native' (the transport's archive API when it has one). */
  transfers?: TransferMode;
  /** Where sandboxes go, in words without secrets (Backend.target). No network I/O. */
  target(): string;
  /** The transport of one environment; may throw a ConfigError for what the spec asks. */
  transport(id: string, spec: EnvironmentSpec): SandboxTransport;
  /** Is the API there, and may berth use it? A failed check ends preflight. May throw: a failed 'api' check. */
  checkApi(): Promise<PreflightCheck[]>;
  /** What a valid spec needs (its images, a build, a node to run on). `spec` is undefined when preflight got none. */
  checkSpec?(spec: EnvironmentSpec | undefined): Promise<PreflightCheck[]>;
  /** berth's resources (LABEL_MANAGED; LABEL_SESSION when given), for the sweep. May throw: sweep rejects with it. */
  listManaged(opts: { session?: string }): Promise<ManagedResource[]>;
  /** Removals a sweep (and so a guardian) runs at once; default 16. An API server takes more than Docker's engine does. */
  sweepConcurrency?: number;
  /**
   * How a guardian process reaches the engine to sweep this process's resources after it died
   * (called once, at the first sandbox). Omitted: this backend has no guardian.
   */
  guardian?(): GuardianTarget;
}

/** A backend made from a definition; `extra` adds the backend's own methods (close(), ...). */
export type DefinedBackend<Extra extends object = object> = Backend & Extra;

/** The one way to make a Backend: see BackendDefinition. */
export function defineBackend<Extra extends object = object>(def: BackendDefinition, extra?: Extra): DefinedBackend<Extra> {
  const limiter = new CreationLimiter(def.options.creation ?? def.defaultCreation);
  const guardian = new Guardian(def.name, def.options.guardian, def.guardian?.bind(def));

  const parse = (input: EnvironmentSpecInput): EnvironmentSpec => {
    const spec = parseEnvironmentSpec(input, { backend: def.name });
    assertSupported(spec, def.capabilities, def.name, def.hints ?? {});
    return spec;
  };

  /** A pooled sandbox's engine deadline is its lifetime plus the longest it may wait idle; the kit enforces the lifetime from its claim. */
  const make = (spec: EnvironmentSpec, pooled?: { maxIdleMs: number }): SandboxEnvironment => {
    const id = newEnvironmentId(def.options.namePrefix ?? 'berth');
    const lifetimeMs = spec.timeouts.lifetimeMs;
    const engineSpec = pooled && lifetimeMs !== undefined ? { ...spec, timeouts: { ...spec.timeouts, lifetimeMs: lifetimeMs + pooled.maxIdleMs } } : spec;
    return new SandboxEnvironment({
      backend: def.name,
      id,
      spec,
      transport: def.transport(id, engineSpec),
      limiter,
      capabilities: def.capabilities,
      ...(def.hints ? { hints: def.hints } : {}),
      transfers: def.transfers ?? 'native',
      beforeCreate: () => guardian.ensure(),
      ...(pooled ? { pooled: true } : {}),
      ...(def.options.labels ? { labels: def.options.labels } : {}),
    });
  };

  const environment = (input: EnvironmentSpecInput): Environment => make(parse(input));

  const pool = (input: EnvironmentSpecInput, opts: PoolOptions): EnvironmentPool => {
    const { size, maxIdleMs, maxClaims, prepare } = poolOptions(opts);
    const spec = parse(input);
    // The transport may refuse what the spec asks (a ConfigError): now, not at the first start.
    make(spec, { maxIdleMs });
    return new SandboxPool({
      backend: def.name,
      spec,
      size,
      maxIdleMs,
      ...(maxClaims !== undefined ? { maxClaims } : {}),
      ...(prepare ? { prepare } : {}),
      make: () => make(spec, { maxIdleMs }),
    });
  };

  const report = (checks: PreflightCheck[]): PreflightReport => ({ backend: def.name, ok: checks.every((c) => c.status !== 'fail'), checks });

  const preflight = async (input?: EnvironmentSpecInput): Promise<PreflightReport> => {
    const checks: PreflightCheck[] = [];
    try {
      checks.push(...(await def.checkApi()));
    } catch (error) {
      checks.push(preflightFailure('api', error));
    }
    if (checks.some((c) => c.status === 'fail')) return report(checks);
    let spec: EnvironmentSpec | undefined;
    if (input !== undefined) {
      const { env, check } = preflightSpec(() => environment(input));
      checks.push(check);
      if (!env) return report(checks);
      spec = env.spec;
    }
    if (def.checkSpec) checks.push(...(await def.checkSpec(spec)));
    return report(checks);
  };

  const sweep = async (opts: SweepOptions = {}): Promise<SweepReport> => {
    const run = new Sweep(def.name, opts);
    const orphans = (await def.listManaged(opts.session ? { session: opts.session } : {})).filter((r) => run.isOrphan(r.labels, r.createdAtMs));
    // A few removals at once: one at a time, 10,000 sandboxes take minutes on any engine.
    let next = 0;
    const worker = async () => {
      while (next < orphans.length) await run.remove(orphans[next++]!);
    };
    await Promise.all(Array.from({ length: Math.min(def.sweepConcurrency ?? SWEEP_CONCURRENCY, orphans.length) }, worker));
    return run.report;
  };

  const backend: Backend = {
    specificationVersion: SPECIFICATION_VERSION,
    name: def.name,
    capabilities: def.capabilities,
    hints: def.hints ?? {},
    get target() {
      return def.target();
    },
    environment,
    // async: a spec refused by environment() is a rejection, as callers of a Promise expect.
    start: async (input, opts = {}) => startAndCleanUp(environment(input), opts),
    preflight,
    sweep,
    pool,
  };
  return Object.assign(backend, extra ?? {}) as DefinedBackend<Extra>;
}
