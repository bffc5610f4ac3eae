import type { Environment, PreflightCheck } from '../contract.js';
import { serializeError } from '../errors.js';

/** `Backend.start`: start an environment; on failure remove what was made before rejecting. */
export async function startAndCleanUp<E extends Environment>(env: E, opts: { signal?: AbortSignal } = {}): Promise<E> {
  try {
    await env.start(opts);
  } catch (error) {
    await env.teardown().catch(() => undefined);
    throw error;
  }
  return env;
}

/**
 * Preflight's spec check: the environment `make` builds from the spec (which refuses bad input and
 * unclaimed capabilities), and the check saying so.
 */
export function preflightSpec<E extends Environment>(make: () => E): { env?: E; check: PreflightCheck } {
  try {
    return { env: make(), check: { name: 'spec', status: 'ok', message: 'the spec is valid and the backend supports it' } };
  } catch (error) {
    return { check: preflightFailure('spec', error) };
  }
}

/** A failed preflight check, with the error behind it serialised (secrets redacted). */
export function preflightFailure(name: string, error: unknown, message?: string): PreflightCheck {
  return {
    name,
    status: 'fail',
    message: message ?? (error instanceof Error ? error.message : String(error)),
    error: serializeError(error),
  };
}
