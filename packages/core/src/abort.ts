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
