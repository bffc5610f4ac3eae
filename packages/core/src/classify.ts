import { type BerthError, findBerthCause, type FailureCategory } from './errors.js';

export interface ClassifiedFailure {
  /** 'unclassified' when nothing in the cause chain says what kind of failure this was. */
  category: FailureCategory | 'unclassified';
  /** The most specific type found: a BerthError type, a Node error code, or the error's name. */
  type: string;
  message: string;
  unclassified: boolean;
  retryable: boolean;
  retryAfterMs?: number;
}

// Node/undici network error codes that mean "the infrastructure hiccuped": transient by nature.
const TRANSIENT_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'ERR_HTTP2_STREAM_ERROR',
  'ERR_HTTP2_SESSION_ERROR',
  'ERR_HTTP2_GOAWAY_SESSION',
]);

function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'string') return error;
  try {
    return JSON.stringify(error) ?? String(error);
  } catch {
    return String(error);
  }
}

/**
 * Says what kind of failure a thrown value is, walking its cause chain: the first BerthError
 * found decides (outer errors that wrap a berth error never hide it). An AbortError is
 * cancellation; well-known network error codes are transient infrastructure. Anything else is
 * 'unclassified': counted as such, never silently as a task failure.
 */
export function classifyFailure(error: unknown): ClassifiedFailure {
  const berth: BerthError | undefined = findBerthCause(error);
  if (berth) {
    const out: ClassifiedFailure = {
      category: berth.category,
      type: berth.type,
      message: messageOf(error),
      unclassified: false,
      retryable: berth.retryable,
    };
    if (berth.retryAfterMs !== undefined) out.retryAfterMs = berth.retryAfterMs;
    return out;
  }
  let current: unknown = error;
  for (let depth = 0; depth < 32 && current instanceof Error; depth++) {
    if (current.name === 'AbortError' || current.name === 'TimeoutError') {
      const timeout = current.name === 'TimeoutError';
      return {
        category: timeout ? 'transient_infra' : 'cancelled',
        type: current.name,
        message: messageOf(error),
        unclassified: false,
        retryable: timeout,
      };
    }
    const code = (current as Error & { code?: unknown }).code;
    if (typeof code === 'string' && TRANSIENT_CODES.has(code)) {
      return { category: 'transient_infra', type: code, message: messageOf(error), unclassified: false, retryable: true };
    }
    current = current.cause;
  }
  const type = error instanceof Error ? error.name : typeof error;
  return { category: 'unclassified', type, message: messageOf(error), unclassified: true, retryable: false };
}
