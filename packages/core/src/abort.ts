import { once } from 'node:events';
import { CancelledError, type Operation } from './errors.js';

/** Throw CancelledError if the signal has fired; its reason becomes the cause. */
export function throwIfAborted(
  signal: AbortSignal | undefined,
  context: { operation: Operation; backend?: string; environmentId?: string },
): void {
  if (signal?.aborted) throw cancelledFrom(signal, context);
}

export function cancelledFrom(
  signal: AbortSignal,
  context: { operation: Operation; backend?: string; environmentId?: string },
): CancelledError {
  return new CancelledError({
    message: `${context.operation} was cancelled by the caller`,
    cause: signal.reason,
    ...context,
  });
}

/**
 * Wait for `work`, but no longer than `signal` allows: calls that hang (an engine that never
 * answers) must not hold the caller past its deadline. Rejects with the signal's reason; the
 * work goes on, and the caller cleans up after it.
 */
export async function raceAbort<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  signal.throwIfAborted();
  const done = new AbortController();
  const aborted = once(signal, 'abort', { signal: done.signal }).then(() => {
    throw signal.reason;
  });
  try {
    return await Promise.race([work, aborted]);
  } finally {
    done.abort();
    aborted.catch(() => undefined);
  }
}
