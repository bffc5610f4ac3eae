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

/** A failed preflight check, with the error behind it serialised (secrets redacted). */
export function preflightFailure(name: string, error: unknown, message?: string): PreflightCheck {
  return {
    name,
    status: 'fail',
    message: message ?? (error instanceof Error ? error.message : String(error)),
    error: serializeError(error),
  };
}
