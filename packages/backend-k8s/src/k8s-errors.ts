import { ApiException } from '@kubernetes/client-node';
import { BackendAuthError, BackendUnavailableError, BerthError, SandboxLostError, type Operation } from '@berth/core';
import { isUnreachable, retryIdempotent, unreachableApi } from '@berth/core/backend-kit';
import { BACKEND } from './cluster.js';

export interface ErrorContext {
  operation: Operation;
  environmentId?: string;
}

/** The HTTP status of an API error, if it is one. */
export function statusOf(error: unknown): number | undefined {
  if (error instanceof ApiException) return error.code;
  const code = (error as { code?: unknown; statusCode?: unknown } | undefined)?.statusCode;
  return typeof code === 'number' ? code : undefined;
}

/** The API server's own words: the Status message when it sent one. */
export function apiMessage(error: unknown): string {
  if (error instanceof ApiException) {
    const body: unknown = error.body;
    if (typeof body === 'string') {
      try {
        const parsed = JSON.parse(body) as { message?: unknown };
        if (typeof parsed.message === 'string') return parsed.message;
      } catch {
        return body.slice(0, 500) || `HTTP ${error.code}`;
      }
    }
    if (body && typeof body === 'object' && typeof (body as { message?: unknown }).message === 'string') return (body as { message: string }).message;
    return `HTTP ${error.code}`;
  }
  return error instanceof Error ? error.message : String(error);
}

function retryAfterMs(error: unknown): number | undefined {
  if (!(error instanceof ApiException)) return undefined;
  const header = (error.headers as Record<string, string | undefined>)['retry-after'];
  const seconds = header === undefined ? NaN : Number(header);
  return Number.isFinite(seconds) ? seconds * 1000 : undefined;
}

/**
 * The API's answers in berth's terms: 401/403 are berth's own credentials refused (permanent), 429
 * and 5xx and an unreachable server are transient (Retry-After kept), a pod that is not there
 * during an operation is a lost sandbox. Undefined when the error is none of these.
 */
export function mapApiError(error: unknown, ctx: ErrorContext, opts: { podGone?: boolean } = {}): BerthError | undefined {
  if (BerthError.isInstance(error)) return error;
  const base = { operation: ctx.operation, backend: BACKEND, ...(ctx.environmentId ? { environmentId: ctx.environmentId } : {}), cause: error };
  const status = statusOf(error);
  if (status === 401 || status === 403) {
    return new BackendAuthError({
      ...base,
      message: `the Kubernetes API refused berth's credentials (${status}): ${apiMessage(error)}; check the kubeconfig's user and the Role berth needs (see @berth/backend-k8s's README)`,
    });
  }
  if (status === 429 || (status !== undefined && status >= 500)) {
    const after = retryAfterMs(error);
    return new BackendUnavailableError({
      ...base,
      message: `the Kubernetes API answered ${status}: ${apiMessage(error)}`,
      ...(after !== undefined ? { retryAfterMs: after } : {}),
    });
  }
  if (status === 404 && opts.podGone) {
    return new SandboxLostError({ ...base, message: `pod ${ctx.environmentId ?? ''} no longer exists`, lastState: 'deleted' });
  }
  return unreachableApi(error, { ...base, what: 'the Kubernetes API', hint: 'check the kubeconfig server address and that the cluster is up' });
}

/** 429 (with its Retry-After), 5xx and a connection that never reached the API: worth another try. */
export function transientAnswer(error: unknown): { retryAfterMs?: number } | undefined {
  const status = statusOf(error);
  if (status === 429 || status === 500 || status === 502 || status === 503 || status === 504) {
    const after = retryAfterMs(error);
    return after !== undefined ? { retryAfterMs: after } : {};
  }
  if (status === undefined && isUnreachable(error)) return {};
  return undefined;
}

/**
 * An idempotent API call (read, list, delete, create under a name berth chose), retried a few
 * times on 429/5xx/a dropped connection before the error is classified. Never for anything that
 * would do its work twice.
 */
export function idempotent<T>(call: () => Promise<T>, signal?: AbortSignal): Promise<T> {
  return retryIdempotent(call, transientAnswer, signal ? { signal } : {});
}
