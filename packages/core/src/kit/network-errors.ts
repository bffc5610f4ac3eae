import { BackendUnavailableError, type BerthError, type Operation } from '../errors.js';

/** Node's codes for an API that cannot be reached (refused, reset, unresolvable, timed out). */
const UNREACHABLE_CODES = new Set([
  'ENOENT',
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ENOTFOUND',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** Whether an error is a call that never reached the API (refused, reset, unresolvable, timed out). */
export function isUnreachable(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && UNREACHABLE_CODES.has(code);
}

/**
 * A call that never reached the backend's API is BackendUnavailableError (transient): `what` names
 * the API, `hint` says what to check. Undefined for any other error.
 */
export function unreachableApi(
  error: unknown,
  ctx: { operation: Operation; backend: string; environmentId?: string; what: string; hint: string },
): BerthError | undefined {
  if (!isUnreachable(error)) return undefined;
  const code = String((error as { code: string }).code);
  const { what, hint, ...rest } = ctx;
  // Where it was looked for, as Node's error names it (a socket path, an address and port).
  const { address, port } = error as { address?: unknown; port?: unknown };
  const where = typeof address === 'string' ? ` at ${address}${typeof port === 'number' ? `:${port}` : ''}` : '';
  return new BackendUnavailableError({ ...rest, message: `${what} is unreachable${where} (${code}); ${hint}`, cause: error });
}

/**
 * Codes only a connection that was never made gives (refused, a socket path that does not exist,
 * the socket's permission denied, a name that does not resolve, undici's connect timeout). A
 * reset, a plain timeout or an unreachable host may also end a connection that had sent the
 * request, so they are not here.
 */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOENT', 'EACCES', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT']);

/** Whether a failed call certainly never reached the API: its request cannot have done anything. */
export function refusedBeforeSending(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && NOT_SENT_CODES.has(code);
}
