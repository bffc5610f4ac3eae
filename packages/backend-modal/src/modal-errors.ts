import { BackendAuthError, BackendUnavailableError, BerthError, ConfigError, SandboxLostError, type Operation } from '@berth/core';
import { clientVersionRefused, isClientVersionRefusal } from './client-identity.js';
import { BACKEND } from './credentials.js';
import { GRPC_CODE, GrpcError } from './wire/index.js';

/** A rate's words: "Sandbox creation rate limit (5/s) exceeded" (Modal's, in the wire facts), "too many requests". */
const RATE_WORDS = /rate limit|rate exceeded|too many requests|throttl|slow down/i;

/**
 * A RESOURCE_EXHAUSTED that waiting lifts: it carries Modal's retry policy (an RPCRetryPolicy in
 * grpc-status-details-bin, the one sign Modal's own SDK waits a RESOURCE_EXHAUSTED out by), or
 * its words are a rate's. Undefined for anything else, a RESOURCE_EXHAUSTED with neither included:
 * a quota (a count of sandboxes, of GPUs...), which Modal's SDK raises at once too.
 */
export function rateLimitOf(error: unknown): { retryAfterMs?: number } | undefined {
  if (!GrpcError.isInstance(error) || error.code !== GRPC_CODE.RESOURCE_EXHAUSTED) return undefined;
  if (error.retryAfterMs !== undefined) return { retryAfterMs: error.retryAfterMs };
  return RATE_WORDS.test(error.details) ? {} : undefined;
}

export interface ErrorContext {
  operation: Operation;
  environmentId?: string;
}

/**
 * Modal's status codes in berth's terms (the mapping is listed in the package README's wire
 * section): berth's token refused is permanent; NOT_FOUND on the sandbox or its task means it is
 * gone; RESOURCE_EXHAUSTED, UNAVAILABLE and the like are transient (the retry hint kept; a quota,
 * a RESOURCE_EXHAUSTED that is no rate limit, says which limit and what lowers the need for it);
 * INVALID_ARGUMENT and FAILED_PRECONDITION are the caller's configuration (a FAILED_PRECONDITION
 * saying the client is too old is options.clientVersion's). Undefined for anything
 * that is not a gRPC status.
 */
export function mapModalError(error: unknown, ctx: ErrorContext, opts: { sandboxCall?: boolean; path?: string } = {}): BerthError | undefined {
  if (BerthError.isInstance(error)) return error;
  if (!GrpcError.isInstance(error)) return undefined;
  const base = { operation: ctx.operation, backend: BACKEND, ...(ctx.environmentId ? { environmentId: ctx.environmentId } : {}), cause: error };
  switch (error.code) {
    case GRPC_CODE.UNAUTHENTICATED:
    case GRPC_CODE.PERMISSION_DENIED:
      return new BackendAuthError({
        ...base,
        message: `Modal refused berth's token (${error.codeName}): ${error.details}; check MODAL_TOKEN_ID / MODAL_TOKEN_SECRET or the active profile of ~/.modal.toml`,
      });
    case GRPC_CODE.NOT_FOUND:
      if (opts.sandboxCall) return new SandboxLostError({ ...base, message: `the Modal sandbox is gone: ${error.details}`, lastState: 'not found' });
      return new ConfigError({ ...base, path: opts.path ?? 'options', message: `Modal has no such object: ${error.details}` });
    case GRPC_CODE.FAILED_PRECONDITION:
      // Modal refuses a client version it no longer serves this way: berth's identity, not the spec.
      if (isClientVersionRefusal(error.details)) return clientVersionRefused(error.details, base);
      return new ConfigError({ ...base, path: opts.path ?? 'spec', message: `Modal refused the request (${error.codeName}): ${error.details}` });
    case GRPC_CODE.INVALID_ARGUMENT:
    case GRPC_CODE.OUT_OF_RANGE:
      return new ConfigError({ ...base, path: opts.path ?? 'spec', message: `Modal refused the request (${error.codeName}): ${error.details}` });
    case GRPC_CODE.RESOURCE_EXHAUSTED:
      if (rateLimitOf(error)) {
        return new BackendUnavailableError({
          ...base,
          message: `Modal rate-limited the request: ${error.details}`,
          ...(error.retryAfterMs !== undefined ? { retryAfterMs: error.retryAfterMs } : {}),
        });
      }
      return new BackendUnavailableError({
        ...base,
        message:
          `Modal's limit was reached: ${error.details} (a quota, not a rate limit: Modal gave no retry hint, so waiting a moment ` +
          'will not lift it; fewer sandboxes at once (options.creation.maxConcurrent) or a higher limit from Modal will)',
      });
    default:
      return new BackendUnavailableError({ ...base, message: `Modal's API failed (${error.codeName ?? error.code}): ${error.details}` });
  }
}
