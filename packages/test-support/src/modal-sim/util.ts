// Small shared pieces: Modal-shaped ids, change notification for long polls, result statuses.
import { randomBytes } from 'node:crypto';
import { Code, RpcError } from './grpc-server.js';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/** Like Modal's: a type prefix and 22 alphanumerics, e.g. sb-Ab3... (V2 sandbox ids are longer: sandbox-ids.ts). */
export function newId(prefix: string, length = 22): string {
  return `${prefix}-${[...randomBytes(length)].map((b) => ALPHABET[b % ALPHABET.length]).join('')}`;
}

/** GenericResult.GenericStatus names, as the codec reads and writes them. */
export const Status = {
  SUCCESS: 'GENERIC_STATUS_SUCCESS',
  FAILURE: 'GENERIC_STATUS_FAILURE',
  TERMINATED: 'GENERIC_STATUS_TERMINATED',
  TIMEOUT: 'GENERIC_STATUS_TIMEOUT',
  INIT_FAILURE: 'GENERIC_STATUS_INIT_FAILURE',
  INTERNAL_FAILURE: 'GENERIC_STATUS_INTERNAL_FAILURE',
  IDLE_TIMEOUT: 'GENERIC_STATUS_IDLE_TIMEOUT',
  MEMORY_MANAGER_EVICTION: 'GENERIC_STATUS_MEMORY_MANAGER_EVICTION',
} as const;

export interface GenericResult {
  status: (typeof Status)[keyof typeof Status];
  exception?: string;
  exitcode?: number;
}

/** Wakes long polls when something they watch changes. */
export class Changes {
  #waiters = new Set<() => void>();

  notify(): void {
    const waiters = this.#waiters;
    this.#waiters = new Set();
    for (const wake of waiters) wake();
  }

  next(): Promise<void> {
    return new Promise((resolve) => this.#waiters.add(resolve));
  }

  /** How many are waiting for the next change (for tests: a long poll is parked, not on its way). */
  get waiting(): number {
    return this.#waiters.size;
  }
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new RpcError(Code.CANCELLED, 'call cancelled'));
    const timer = setTimeout(done, Math.max(0, ms));
    function done() {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }
    function onAbort() {
      clearTimeout(timer);
      reject(new RpcError(Code.CANCELLED, 'call cancelled'));
    }
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Long-poll: `check` until it gives a value, re-checking whenever `changes` fires, until `untilMs`
 * (epoch ms). Undefined when time ran out; a CANCELLED RpcError when the caller went away.
 */
export async function waitFor<T>(check: () => T | undefined, changes: Changes, untilMs: number, signal: AbortSignal): Promise<T | undefined> {
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    const remaining = untilMs - Date.now();
    if (remaining <= 0) return undefined;
    // The timer is cancelled once a change wins the race, so no poll leaves a timer behind.
    const local = new AbortController();
    const timer = sleep(Math.min(remaining, 2 ** 31 - 1), AbortSignal.any([signal, local.signal])).catch((error: unknown) => {
      if (signal.aborted) throw error;
    });
    try {
      await Promise.race([changes.next(), timer]);
    } finally {
      local.abort();
    }
  }
}

/** The first line of a dockerode error, without its "(HTTP code 500) server error - " prefix. */
export function engineMessage(error: unknown): string {
  const json = (error as { json?: { message?: string } | null }).json;
  const text = json?.message ?? (error as Error).message ?? String(error);
  return text.replace(/^\(HTTP code \d+\)[^-]*- /, '').trim();
}

export function statusCodeOf(error: unknown): number | undefined {
  const code = (error as { statusCode?: unknown }).statusCode;
  return typeof code === 'number' ? code : undefined;
}
