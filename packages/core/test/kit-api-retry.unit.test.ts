// The kit's one retry helper for idempotent calls (issue 18, item 3): what is retried, how long it
// waits (backoff with bounded jitter, the server's retry-after), when it stops. Waits go to a
// recording clock, so no test sleeps except the abort's, which needs a real timer to cut.
import { describe, expect, it } from 'vitest';
import { BackendUnavailableError } from '../src/index.js';
import { retryIdempotent, type ApiRetryPolicy, type TransientAnswer } from '../src/kit/api-retry.js';

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly retryAfterMs?: number,
  ) {
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

/** A clock that records the waits asked of it and returns at once. */
function recorder() {
  const waits: number[] = [];
  return { waits, clock: { sleep: async (ms: number) => void waits.push(ms) } };
}

describe('retryIdempotent', () => {
  it('tries again on 429 and 5xx until the call succeeds', async () => {
    const { call, calls } = scripted(new HttpError(429), new HttpError(503));
    const { clock, waits } = recorder();
    await expect(retryIdempotent(call, transient, { clock })).resolves.toBe('ok');
    expect(calls.n).toBe(3);
    expect(waits).toHaveLength(2);
  });

  it('stops at once on an error that is not retryable (403), and throws it as it was', async () => {
    const forbidden = new HttpError(403);
    const { call, calls } = scripted(forbidden);
    const { clock, waits } = recorder();
    await expect(retryIdempotent(call, transient, { clock })).rejects.toBe(forbidden);
    expect(calls.n).toBe(1);
    expect(waits).toEqual([]);
  });

  it('gives up after the policy’s attempts and throws the last error as it was', async () => {
    const last = new HttpError(500);
    const { call, calls } = scripted(new HttpError(502), new HttpError(503), last, new HttpError(504));
    await expect(retryIdempotent(call, transient, { policy: { attempts: 3 }, clock: recorder().clock })).rejects.toBe(last);
    expect(calls.n).toBe(3);
  });

  it('backs off exponentially from initialMs up to maxMs (no jitter drawn at random() = 0)', async () => {
    const { call } = scripted(...[1, 2, 3, 4, 5].map(() => new HttpError(503)));
    const { clock, waits } = recorder();
    await retryIdempotent(call, transient, { policy: { attempts: 6, initialMs: 100, maxMs: 500 }, random: () => 0, clock });
    expect(waits).toEqual([100, 200, 400, 500, 500]);
  });

  it('keeps the jitter bounded: each wait is between half of its step and the whole of it', async () => {
    for (const r of [0, 0.25, 0.5, 0.75, 0.999]) {
      const { call } = scripted(...[1, 2, 3].map(() => new HttpError(503)));
      const { clock, waits } = recorder();
      await retryIdempotent(call, transient, { policy: { attempts: 4, initialMs: 1000, maxMs: 4000 }, random: () => r, clock });
      [1000, 2000, 4000].forEach((step, i) => {
        expect(waits[i]).toBeGreaterThanOrEqual(step / 2);
        expect(waits[i]).toBeLessThanOrEqual(step);
      });
    }
  });

  it('honours the server’s retryAfterMs: never sooner, even when the backoff says sooner', async () => {
    const { call } = scripted(new HttpError(429, 1_200), new HttpError(503));
    const { clock, waits } = recorder();
    await retryIdempotent(call, transient, { policy: { initialMs: 100 }, random: () => 0, clock });
    expect(waits).toEqual([1_200, 200]);
  });

  it('honours a BerthError’s own retryAfterMs when the answer gives none', async () => {
    const limited = new BackendUnavailableError({ operation: 'teardown', backend: 'k8s', message: 'the API answered 429', retryAfterMs: 3_000 });
    const { call } = scripted(limited);
    const { clock, waits } = recorder();
    await retryIdempotent(call, (e) => (BackendUnavailableError.isInstance(e) ? {} : undefined), { random: () => 0, clock });
    expect(waits).toEqual([3_000]);
  });

  it('leaves a retryAfterMs beyond its cap to the caller instead of blocking', async () => {
    const { call, calls } = scripted(new HttpError(429, 60_000));
    const { clock, waits } = recorder();
    await expect(retryIdempotent(call, transient, { clock })).rejects.toThrow('HTTP 429');
    expect(calls.n).toBe(1);
    expect(waits).toEqual([]);
  });

  it('stops when the signal aborts while waiting, rejecting with the signal’s reason at once', async () => {
    const controller = new AbortController();
    const reason = new Error('the run was cancelled');
    const { call, calls } = scripted(new HttpError(503), new HttpError(503));
    const started = performance.now();
    const pending = retryIdempotent(call, transient, { policy: { initialMs: 10_000, maxMs: 10_000 }, signal: controller.signal });
    setTimeout(() => controller.abort(reason), 20);
    await expect(pending).rejects.toBe(reason);
    expect(calls.n).toBe(1);
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it('does not retry a try that failed once the signal had fired: its own error is thrown', async () => {
    const controller = new AbortController();
    const cut = new HttpError(503);
    const calls = { n: 0 };
    const call = async () => {
      calls.n++;
      controller.abort(new Error('stop'));
      throw cut;
    };
    const { clock, waits } = recorder();
    await expect(retryIdempotent(call, transient, { signal: controller.signal, clock })).rejects.toBe(cut);
    expect(calls.n).toBe(1);
    expect(waits).toEqual([]);
  });

  it('counts failures answered with a policy of their own apart, with that policy’s attempts and backoff', async () => {
    const limited: ApiRetryPolicy = { attempts: 3, initialMs: 1_000, maxMs: 1_000, maxRetryAfterMs: 30_000 };
    class RateLimited extends Error {}
    const answer: TransientAnswer = (e) => (e instanceof RateLimited ? { policy: limited } : transient(e));
    const policy = { attempts: 2, initialMs: 100, maxMs: 100 };

    // One transient retry and two rate-limit retries fit both counts.
    const { call, calls } = scripted(new RateLimited(), new HttpError(503), new RateLimited());
    const { clock, waits } = recorder();
    await expect(retryIdempotent(call, answer, { policy, random: () => 0, clock })).resolves.toBe('ok');
    expect(calls.n).toBe(4);
    expect(waits).toEqual([1_000, 100, 1_000]);

    // A third rate limit is one more than its policy allows.
    const third = new RateLimited();
    const again = scripted(new RateLimited(), new RateLimited(), third);
    await expect(retryIdempotent(again.call, answer, { policy, clock: recorder().clock })).rejects.toBe(third);
    expect(again.calls.n).toBe(3);
  });
});
