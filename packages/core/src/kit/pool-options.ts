import type { PoolOptions } from '../contract.js';
import { ConfigError } from '../errors.js';
import { checkOptionNames, optionNames } from './option-names.js';

const POOL_OPTIONS = optionNames<PoolOptions>()('size', 'maxIdleMs', 'maxClaims', 'prepare');

/** What a pool holds at most: a guard against a typo starting thousands of sandboxes. */
export const MAX_POOL_SIZE = 1000;
/** How long an idle pooled sandbox waits before it is replaced, unless maxIdleMs says otherwise. */
export const DEFAULT_MAX_IDLE_MS = 10 * 60_000;

/** Backend.pool's options, checked: a ConfigError naming the option and its range. */
export function poolOptions(opts: PoolOptions | undefined): { size: number; maxIdleMs: number; maxClaims?: number; prepare?: PoolOptions['prepare'] } {
  checkOptionNames(opts, POOL_OPTIONS, { what: 'a pool', path: 'opts' });
  const size: unknown = opts?.size;
  if (typeof size !== 'number' || !Number.isInteger(size) || size < 1 || size > MAX_POOL_SIZE) {
    throw new ConfigError({
      operation: 'config',
      path: 'opts.size',
      message: `a pool's size is a whole number from 1 to ${MAX_POOL_SIZE}; got ${String(size)}`,
    });
  }
  const maxIdleMs: unknown = opts?.maxIdleMs ?? DEFAULT_MAX_IDLE_MS;
  if (typeof maxIdleMs !== 'number' || !Number.isFinite(maxIdleMs) || maxIdleMs < 1) {
    throw new ConfigError({
      operation: 'config',
      path: 'opts.maxIdleMs',
      message: `a pool's maxIdleMs is a number of milliseconds above 0; got ${String(maxIdleMs)}`,
    });
  }
  const maxClaims: unknown = opts?.maxClaims;
  if (maxClaims !== undefined && (typeof maxClaims !== 'number' || !Number.isInteger(maxClaims) || maxClaims < 1)) {
    throw new ConfigError({
      operation: 'config',
      path: 'opts.maxClaims',
      message: `a pool's maxClaims is a whole number of at least 1; got ${String(maxClaims)}`,
    });
  }
  const prepare: unknown = opts?.prepare;
  if (prepare !== undefined && typeof prepare !== 'function')
    throw new ConfigError({
      operation: 'config',
      path: 'opts.prepare',
      message: `a pool's prepare is a function (env) => Promise<void>; got ${typeof prepare}`,
    });
  return { size, maxIdleMs, ...(maxClaims !== undefined ? { maxClaims } : {}), ...(prepare ? { prepare: prepare as PoolOptions['prepare'] } : {}) };
}
