import { describe, expect, it } from 'vitest';
import { BACKOFF_DEFAULTS, resolveBackoff, retryDelayMs, type Backoff } from '../src/time/backoff.js';

const noJitter: Backoff = { initialMs: 100, maxMs: 60_000, multiplier: 2, jitter: 0 };
const fixed = (value: number) => () => value;

describe('retryDelayMs', () => {
  it('grows exponentially from initialMs, one step per counted attempt', () => {
    const delays = [1, 2, 3, 4, 5].map((counted) => retryDelayMs(counted, noJitter, fixed(0.7)));
    expect(delays).toEqual([100, 200, 400, 800, 1600]);
    expect(retryDelayMs(3, { ...noJitter, multiplier: 3 }, fixed(0))).toBe(900);
  });

  it('treats no counted attempt yet like the first', () => {
    expect(retryDelayMs(0, noJitter, fixed(0))).toBe(100);
    expect(retryDelayMs(1, noJitter, fixed(0))).toBe(100);
  });

  it('caps the delay at maxMs, before the jitter', () => {
    const capped: Backoff = { ...noJitter, maxMs: 1000 };
    expect([3, 4, 5, 40].map((counted) => retryDelayMs(counted, capped, fixed(0)))).toEqual([400, 800, 1000, 1000]);
    expect(retryDelayMs(40, { ...capped, jitter: 0.5 }, fixed(0.5))).toBe(750);
  });

  it('randomises away up to `jitter` of the delay, never adding to it', () => {
    const backoff: Backoff = { ...noJitter, initialMs: 1000, jitter: 0.5 };
    expect(retryDelayMs(1, backoff, fixed(0))).toBe(1000);
    expect(retryDelayMs(1, backoff, fixed(0.5))).toBe(750);
    expect(retryDelayMs(1, backoff, fixed(0.99))).toBe(505);
    for (let r = 0; r < 1; r += 0.05) {
      const delay = retryDelayMs(2, backoff, fixed(r));
      expect(delay).toBeGreaterThanOrEqual(1000);
      expect(delay).toBeLessThanOrEqual(2000);
    }
    // Full jitter can take nearly all of it away.
    expect(retryDelayMs(1, { ...backoff, jitter: 1 }, fixed(0.99))).toBe(10);
  });

  it('rounds to whole milliseconds', () => {
    expect(retryDelayMs(1, { ...noJitter, initialMs: 3, jitter: 0.5 }, fixed(0.5))).toBe(2);
    expect(retryDelayMs(1, { ...noJitter, initialMs: 100, jitter: 0.5 }, fixed(0.333))).toBe(83);
  });

  it('is never sooner than retryAfterMs, and retryAfterMs only ever delays', () => {
    const backoff: Backoff = { ...noJitter, jitter: 1 };
    expect(retryDelayMs(1, backoff, fixed(0.99), 5000)).toBe(5000);
    expect(retryDelayMs(1, noJitter, fixed(0), 20)).toBe(100);
    expect(retryDelayMs(40, noJitter, fixed(0), 90_000)).toBe(90_000);
    expect(retryDelayMs(1, noJitter, fixed(0), 100.4)).toBe(100);
    expect(retryDelayMs(1, noJitter, fixed(0), 150.6)).toBe(151);
  });

  it('takes exactly one draw', () => {
    let draws = 0;
    retryDelayMs(3, BACKOFF_DEFAULTS, () => (draws++, 0.5), 10_000);
    expect(draws).toBe(1);
  });
});

describe('resolveBackoff', () => {
  it('fills in the defaults: 1 s, doubling, capped at 60 s, half jitter', () => {
    expect(resolveBackoff()).toEqual({ initialMs: 1000, maxMs: 60_000, multiplier: 2, jitter: 0.5 });
    expect(resolveBackoff({ initialMs: 10, jitter: 0 })).toEqual({ initialMs: 10, maxMs: 60_000, multiplier: 2, jitter: 0 });
    expect(resolveBackoff()).not.toBe(BACKOFF_DEFAULTS);
  });
});
