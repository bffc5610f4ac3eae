import { BackendUnavailableError, type BerthError, type Operation } from '../errors.js';

/** Node's codes for an API that cannot be reached (refused, reset, unresolvable, timed out). */
const UNREACHABLE_CODES = new Set(['ENOENT', 'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT']);

/**
 * A call that never reached the backend's API is BackendUnavailableError (transient): `what` names
 * the API, `hint` says what to check. Undefined for any other error.
 */
export function unreachableApi(
  error: unknown,
  ctx: { operation: Operation; backend: string; environmentId?: string; what: string; hint: string },
): BerthError | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code !== 'string' || !UNREACHABLE_CODES.has(code)) return undefined;
  const { what, hint, ...rest } = ctx;
  return new BackendUnavailableError({ ...rest, message: `${what} is unreachable (${code}); ${hint}`, cause: error });
}
