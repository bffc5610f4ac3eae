// A sandbox's create that Modal rate-limits is reported to the kit's creation limiter (which then
// holds back this backend's other starts and lowers how many run at once) and sent again after
// the wait, for as long as the start's deadline allows. A quota is not waited for: its
// RESOURCE_EXHAUSTED is thrown, and mapped to an error naming the limit (modal-errors.ts).
import { THROTTLE_BACKOFF, retryDelayMs, type CreateContext } from '@berth/core/backend-kit';
import { systemClock, type Clock } from '@berth/core';
import { rateLimitOf } from './modal-errors.js';
import type { CreateRetry } from './wire/index.js';

export interface ThrottleOptions {
  /** Whose sleep the waits are; tests pass a VirtualClock. */
  clock?: Pick<Clock, 'sleep'>;
  /** Draws in [0, 1) for the jitter; tests fix them. */
  random?: () => number;
}

/**
 * Sends the create until Modal takes it or refuses it for another reason. Each rate limit is said
 * through `ctx.progress({ throttled })`, then waited out: exactly Modal's hint (as its SDK does), else the
 * limiter's backoff (0.5 s doubling to 10 s) with up to half of it randomised away, so creates
 * refused together do not come back together. The wait ends with `ctx.signal` (the deadline).
 */
export function whileThrottled(ctx: CreateContext, opts: ThrottleOptions = {}): CreateRetry {
  const clock = opts.clock ?? systemClock;
  const random = opts.random ?? Math.random;
  const backoff = { ...THROTTLE_BACKOFF, jitter: 0.5 };
  return async (send) => {
    for (let strike = 1; ; strike++) {
      try {
        return await send();
      } catch (error) {
        const limited = ctx.signal.aborted ? undefined : rateLimitOf(error);
        if (!limited) throw error;
        ctx.progress({ throttled: limited.retryAfterMs !== undefined ? { retryAfterMs: limited.retryAfterMs } : {} });
        await clock.sleep(limited.retryAfterMs ?? retryDelayMs(strike, backoff, random), ctx.signal);
      }
    }
  };
}
