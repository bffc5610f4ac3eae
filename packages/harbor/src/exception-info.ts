import { TaskFailure } from '@berth/core';

// harbor records some of the agent's failures in the trial's result (`exception_info`) and goes
// on to collect, copy the artifacts and verify, so the verifier's reward still counts
// (`SingleStepTrial._run_agent` at harbor 39b85872, v0.22.0): the agent's timeout
// (AgentTimeoutError) and an installed agent's non-zero exit (NonZeroAgentExitCodeError).

/** harbor's exception classes for an agent that ended badly but left a sandbox worth verifying. */
export type HarborAgentExceptionType = 'AgentTimeoutError' | 'NonZeroAgentExitCodeError';

/**
 * harbor's `exception_info` (type, message, when), in berth's spelling. In result.json beside the
 * outcome or the failure, and in the outcome itself, so a report can show it.
 */
// A type, not an interface: it goes into the run journal, which takes JSON values only.
export type HarborExceptionInfo = {
  /** harbor's exception class name, as harbor's result.json says it. */
  exceptionType: HarborAgentExceptionType;
  exceptionMessage: string;
  /** ISO time the agent ended. */
  occurredAt: string;
};

export function exceptionInfo(exceptionType: HarborAgentExceptionType, exceptionMessage: string, occurredAt = new Date()): HarborExceptionInfo {
  return { exceptionType, exceptionMessage, occurredAt: occurredAt.toISOString() };
}

/**
 * The verifier's own task failure (no reward, a verifier timeout...) after the agent had already
 * failed: still the verifier's failure (the type a report counts), saying what the agent did first.
 * harbor keeps only the first exception in `exception_info` (the agent's); berth keeps both, the
 * agent's in result.json's `exceptionInfo`. Anything that is not a TaskFailure goes on unchanged:
 * it is infrastructure, and its type decides whether the attempt is retried.
 */
export function afterAgentException(error: unknown, info: HarborExceptionInfo): unknown {
  if (!TaskFailure.isInstance(error)) return error;
  return new TaskFailure({
    kind: error.type,
    message: `${error.message} (after the agent's ${info.exceptionType}: ${info.exceptionMessage})`,
    operation: error.operation ?? 'trial',
    ...(error.backend ? { backend: error.backend } : {}),
    ...(error.environmentId ? { environmentId: error.environmentId } : {}),
    ...(error.cause === undefined ? {} : { cause: error.cause }),
  });
}
