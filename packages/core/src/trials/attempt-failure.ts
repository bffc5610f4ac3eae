import { classifyFailure } from '../classify.js';
import { serializeError } from '../errors.js';
import { redactSecrets } from '../redact.js';
import type { StopReason } from './task-state.js';
import type { AttemptFailure } from './types.js';

/**
 * How an attempt that threw is recorded.
 *
 * @param stoppedBy the run's stop reason when the run had aborted this attempt, else undefined.
 */
export function attemptFailure(error: unknown, stoppedBy: StopReason | undefined): AttemptFailure {
  const classified = classifyFailure(error);
  const failure: AttemptFailure = {
    category: classified.category,
    type: classified.type,
    // Journals and reports leave the process: no secret may ride along in a message.
    message: redactSecrets(classified.message),
    unclassified: classified.unclassified,
    retryable: classified.retryable,
    error: serializeError(error),
  };
  if (classified.retryAfterMs !== undefined) failure.retryAfterMs = classified.retryAfterMs;
  // The run stopped this attempt; whatever it threw on the way out is not its own failure.
  // A task failure is still the task's verdict and stays usable.
  if (stoppedBy && classified.category !== 'task_failure') {
    failure.stoppedBy = stoppedBy;
    failure.category = 'cancelled';
    failure.retryable = false;
  }
  return failure;
}
