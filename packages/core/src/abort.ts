import { once } from 'node:events';
import { CancelledError, type Operation } from './errors.js';

/** Throw CancelledError if the signal has fired; its reason becomes the cause. */
export function throwIfAborted(signal: AbortSignal | undefined, context: { operation: Operation; backend?: string; environmentId?: string }): void {
  if (signal?.aborted) throw cancelledFrom(signal, context);
}

export function cancelledFrom(signal: AbortSignal, context: { operation: Operation; backend?: string; environmentId?: string }): CancelledError {
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

/** A signal that follows others until the operation it serves ends: see linkSignals. */
export interface SignalLink extends Disposable {
  /** Fires with the reason of the first input to fire, or of abort(). */
  readonly signal: AbortSignal;
  /** Fire it for a reason of the operation's own (a deadline, a failure); unhooks from the inputs. */
  abort(reason?: unknown): void;
  /** Unhook from the inputs: the signal never fires because of them after this. Idempotent. */
  dispose(): void;
}

/**
 * A signal for one operation that fires when any of `inputs` fires (undefined ones are skipped),
 * with that input's reason; already aborted if one already is. Call dispose() when the operation
 * ends, success or not (or `using link = linkSignals(...)`): its listeners leave the inputs, so an
 * ended operation's signal neither fires later nor is held by a long-lived input. Firing unhooks
 * too. Each live link holds one listener per input: an input shared by more than ten operations at
 * once wants setMaxListeners.
 *
 * Why not AbortSignal.any: it cannot be unlinked, so a derived signal fires whenever the input
 * does, long after its operation ended; and on Node 20 every signal derived from a long-lived one
 * (a run's, an environment's) stays referenced by it until that one aborts, even after a GC
 * (nodejs/node#55351; still so on 20.20), so one per exec or per attempt adds up over a run. This
 * is the one place berth links signals. AbortSignal.timeout is kept only for short, bounded waits (a few
 * seconds, one build): its timer cannot be cleared, so the signal lives until it fires, which is
 * harmless there and not for a long timeout made per call.
 */
export function linkSignals(...inputs: readonly (AbortSignal | undefined)[]): SignalLink {
  const controller = new AbortController();
  const hooked: { input: AbortSignal; listener: () => void }[] = [];
  const dispose = (): void => {
    for (const { input, listener } of hooked.splice(0)) input.removeEventListener('abort', listener);
  };
  const abort = (reason?: unknown): void => {
    dispose();
    controller.abort(reason);
  };
  for (const input of inputs) {
    if (!input) continue;
    if (input.aborted) {
      abort(input.reason);
      break;
    }
    const listener = () => abort(input.reason);
    input.addEventListener('abort', listener, { once: true });
    hooked.push({ input, listener });
  }
  return { signal: controller.signal, abort, dispose, [Symbol.dispose]: dispose };
}
