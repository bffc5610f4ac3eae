import { describe, expect, it } from 'vitest';
import { retryIdempotent, type TransientAnswer } from '../src/kit/api-retry.js';

class HttpError extends Error {
  constructor(readonly status: number, readonly retryAfterMs?: number) {
    super(`HTTP ${status}`);
  }
}

const transient: TransientAnswer = (error) => {
  if (!(error instanceof HttpError)) return undefined;
  if (error.status === 429 || error.status >= 500) return error.retryAfterMs !== undefined ? { retryAfterMs: error.retryAfterMs } : {};
  return undefined;
};

/** A call that fails with these errors in turn, then answers 'ok'; counts its calls. */
function scripted(...errors: Error[]) {
  const calls = { n: 0 };
  const call = async () => {
    const error = errors[calls.n++];
    if (error) throw error;
    return 'ok';
  };
  return { call, calls };
}

const fast = { policy: { initialMs: 1, maxMs: 2 } };

describe('retryIdempotent', () => {
  it('tries again on 429 and 5xx until the call succeeds', async () => {
    const { call, calls } = scripted(new HttpError(429), new HttpError(503));
    await expect(retryIdempotent(call, transient, fast)).resolves.toBe('ok');
    expect(calls.n).toBe(3);
  });

  it('does not retry an answer that will not change (403, 404)', async () => {
    const { call, calls } = scripted(new HttpError(403));
    await expect(retryIdempotent(call, transient, fast)).rejects.toThrow('HTTP 403');
    expect(calls.n).toBe(1);
  });

  it('gives up after the policy’s attempts and throws the last error as it was', async () => {
    const last = new HttpError(500);
    const { call, calls } = scripted(new HttpError(502), new HttpError(503), last, new HttpError(504));
    await expect(retryIdempotent(call, transient, { policy: { attempts: 3, initialMs: 1, maxMs: 2 } })).rejects.toBe(last);
    expect(calls.n).toBe(3);
  });

  it('waits at least the server’s Retry-After', async () => {
    const { call } = scripted(new HttpError(429, 120));
    const started = performance.now();
    await retryIdempotent(call, transient, fast);
    expect(performance.now() - started).toBeGreaterThanOrEqual(115);
  });

  it('leaves a Retry-After beyond its cap to the caller instead of blocking', async () => {
    const { call, calls } = scripted(new HttpError(429, 60_000));
    await expect(retryIdempotent(call, transient, fast)).rejects.toThrow('HTTP 429');
    expect(calls.n).toBe(1);
  });

  it('stops waiting when aborted and throws the API error, not an AbortError', async () => {
    const controller = new AbortController();
    const { call, calls } = scripted(new HttpError(503), new HttpError(503));
    const pending = retryIdempotent(call, transient, { policy: { initialMs: 10_000, maxMs: 10_000 }, signal: controller.signal });
    setTimeout(() => controller.abort(), 20);
    await expect(pending).rejects.toThrow('HTTP 503');
    expect(calls.n).toBe(1);
  });
});
