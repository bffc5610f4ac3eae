// A sandbox create Modal rate-limits (issue 31, item 3): told to the kit's creation limiter as
// `throttled`, waited out (Modal's hint, else the limiter's backoff) and sent again within the
// start's deadline; a quota is an error at once, naming the limit. Virtual time, no engine.
import { describe, expect, it } from 'vitest';
import { BackendUnavailableError, VirtualClock } from '@berth/core';
import type { CreateContext, StartProgress } from '@berth/core/backend-kit';
import { whileThrottled } from '../src/create-throttle.js';
import { mapModalError, rateLimitOf } from '../src/modal-errors.js';
import { GRPC_CODE, GrpcError } from '../src/wire/index.js';

const RATE = 'Sandbox creation rate limit (5/s) exceeded';
const QUOTA = 'Workspace has reached its limit of 100 running sandboxes';
const exhausted = (message: string, retryAfterMs?: number) => new GrpcError(GRPC_CODE.RESOURCE_EXHAUSTED, message, retryAfterMs);

describe('RESOURCE_EXHAUSTED: a rate limit or a quota', () => {
  it("a retry hint (Modal's RPCRetryPolicy) or a rate's words is a rate limit; anything else a quota", () => {
    expect(rateLimitOf(exhausted(QUOTA, 1500))).toEqual({ retryAfterMs: 1500 });
    expect(rateLimitOf(exhausted(RATE))).toEqual({});
    expect(rateLimitOf(exhausted('Too Many Requests'))).toEqual({});
    expect(rateLimitOf(exhausted(QUOTA))).toBeUndefined();
    expect(rateLimitOf(new GrpcError(GRPC_CODE.UNAVAILABLE, RATE))).toBeUndefined();
    expect(rateLimitOf(new Error(RATE))).toBeUndefined();
  });

  it('a quota is a BackendUnavailableError that names the limit and what lowers the need for it', () => {
    const quota = mapModalError(exhausted(QUOTA), { operation: 'start', environmentId: 'e-1' });
    expect(BackendUnavailableError.isInstance(quota)).toBe(true);
    expect(quota?.message).toContain(QUOTA);
    expect(quota?.message).toContain('a quota, not a rate limit');
    expect(quota?.message).toContain('options.creation.maxConcurrent');
    const rate = mapModalError(exhausted(RATE, 2000), { operation: 'start' });
    expect(rate).toMatchObject({ message: `Modal rate-limited the request: ${RATE}`, retryAfterMs: 2000 });
  });
});

describe('whileThrottled: a create sent again while Modal rate-limits it', () => {
  /** A create that Modal refuses with these errors in turn, then takes; when each try was sent. */
  function scripted(clock: VirtualClock, ...errors: Error[]) {
    const sentAt: number[] = [];
    const send = async () => {
      sentAt.push(clock.now());
      const error = errors[sentAt.length - 1];
      if (error) throw error;
      return 'sb-1';
    };
    return { send, sentAt };
  }
  function context(signal = new AbortController().signal) {
    const said: StartProgress[] = [];
    const ctx: CreateContext = { labels: {}, signal, progress: (update) => said.push(update), notify: () => undefined, lost: () => undefined };
    return { ctx, said };
  }

  it("waits exactly Modal's hint, telling the limiter each time, then sends again", async () => {
    const clock = new VirtualClock();
    const { send, sentAt } = scripted(clock, exhausted(RATE, 1500), exhausted(RATE, 1500));
    const { ctx, said } = context();
    expect(await whileThrottled(ctx, { clock })(send)).toBe('sb-1');
    expect(sentAt).toEqual([0, 1500, 3000]);
    expect(said).toEqual([{ throttled: { retryAfterMs: 1500 } }, { throttled: { retryAfterMs: 1500 } }]);
  });

  it("without a hint: the limiter's backoff, 0.5 s doubling (jitter drawn away here), and the limiter hears no hint", async () => {
    const clock = new VirtualClock();
    const { send, sentAt } = scripted(clock, exhausted(RATE), exhausted(RATE), exhausted(RATE));
    const { ctx, said } = context();
    expect(await whileThrottled(ctx, { clock, random: () => 0 })(send)).toBe('sb-1');
    expect(sentAt).toEqual([0, 500, 1500, 3500]);
    expect(said).toEqual([{ throttled: {} }, { throttled: {} }, { throttled: {} }]);
  });

  it('a quota, or any other refusal, is thrown at once: nothing waited, nothing said', async () => {
    const clock = new VirtualClock();
    for (const error of [exhausted(QUOTA), new GrpcError(GRPC_CODE.INVALID_ARGUMENT, 'bad')]) {
      const { send, sentAt } = scripted(clock, error);
      const { ctx, said } = context();
      await expect(whileThrottled(ctx, { clock })(send)).rejects.toBe(error);
      expect([sentAt, said]).toEqual([[0], []]);
    }
  });

  it("the start's deadline ends the wait, with the deadline's reason", async () => {
    const clock = new VirtualClock();
    const deadline = new AbortController();
    const { send, sentAt } = scripted(clock, exhausted(RATE, 60_000));
    // The deadline fires while the wait runs (virtual time would otherwise jump to its end).
    const ctx: CreateContext = {
      labels: {},
      signal: deadline.signal,
      progress: () => queueMicrotask(() => deadline.abort(new Error('startup deadline of 1000 ms'))),
      notify: () => undefined,
      lost: () => undefined,
    };
    await expect(whileThrottled(ctx, { clock })(send)).rejects.toThrow('startup deadline of 1000 ms');
    expect(sentAt).toEqual([0]);
  });
});
