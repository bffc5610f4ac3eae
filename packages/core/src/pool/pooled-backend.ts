import type { Backend, EnvironmentPool, EnvironmentSpecInput, PoolOptions } from '../contract.js';
import { startAndCleanUp } from '../kit/backend-helpers.js';
import { poolOptions } from '../kit/pool-options.js';
import type { EnvironmentSpec } from '../spec.js';
import { PooledEnvironment } from './pooled-environment.js';

/** A backend whose start() claims from warm pools, one per distinct spec; see pooled(). */
export interface PooledBackend extends Backend {
  /** The pools made so far, by spec (as the backend parsed it). */
  readonly pools: ReadonlyMap<string, EnvironmentPool>;
  /** Close every pool: waiting claims reject, every sandbox a pool holds is removed. Claimed ones stay their callers'. */
  close(): Promise<void>;
}

/** A spec's identity: the parsed spec with its keys in order (two specs written differently but alike share a pool). */
function specKey(spec: EnvironmentSpec): string {
  return JSON.stringify(spec, (_key, value: unknown) =>
    value && typeof value === 'object' && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : value,
  );
}

/**
 * `backend` with warm pools: every environment(spec).start() (and so runTrials, @berth/harbor and
 * `berth run --pool`) claims from a pool of `opts.size` sandboxes of that spec, made at the first
 * start of the spec. A pool not claimed from for `maxIdleMs` is closed (a run that moved on to
 * other tasks does not keep their sandboxes). Call close() when done.
 */
export function pooled(backend: Backend, opts: PoolOptions): PooledBackend {
  const checked = poolOptions(opts);
  const pools = new Map<string, { pool: EnvironmentPool; usedAt: number }>();
  let reaper: NodeJS.Timeout | undefined;

  const reap = () => {
    const now = Date.now();
    for (const [key, entry] of pools) {
      if (now - entry.usedAt < checked.maxIdleMs) continue;
      pools.delete(key);
      void entry.pool.close();
    }
    if (pools.size === 0) {
      clearInterval(reaper);
      reaper = undefined;
    }
  };

  const poolFor = (key: string, input: EnvironmentSpecInput): EnvironmentPool => {
    let entry = pools.get(key);
    if (!entry) {
      entry = { pool: backend.pool(input, checked), usedAt: Date.now() };
      pools.set(key, entry);
      reaper ??= setInterval(reap, Math.max(100, Math.floor(checked.maxIdleMs / 4))).unref();
    }
    entry.usedAt = Date.now();
    return entry.pool;
  };

  const environment = (input: EnvironmentSpecInput): PooledEnvironment => {
    // The backend's own environment(): the spec checked as it would be, and an id to use until the claim.
    const probe = backend.environment(input);
    const key = specKey(probe.spec);
    return new PooledEnvironment({
      backend: backend.name,
      id: probe.id,
      spec: probe.spec,
      networkEnforcement: probe.networkEnforcement,
      pool: () => poolFor(key, input),
    });
  };

  return {
    specificationVersion: backend.specificationVersion,
    name: backend.name,
    capabilities: backend.capabilities,
    hints: backend.hints,
    get target() {
      return backend.target;
    },
    get pools() {
      return new Map([...pools].map(([key, entry]) => [key, entry.pool]));
    },
    environment,
    start: async (input, startOpts = {}) => startAndCleanUp(environment(input), startOpts),
    preflight: (spec) => backend.preflight(spec),
    sweep: (sweepOpts) => backend.sweep(sweepOpts),
    pool: (spec, poolOpts) => backend.pool(spec, poolOpts),
    close: async () => {
      clearInterval(reaper);
      reaper = undefined;
      const all = [...pools.values()];
      pools.clear();
      await Promise.all(all.map((entry) => entry.pool.close()));
    },
  };
}
