// The creation limiter backing off when the engine says it is overloaded (issue 31, item 3):
// AIMD on the creations allowed at once, the engine's Retry-After or an exponential pause, and
// the queue's order kept through it all. Virtual time: every wait is exact and instant.
import { describe, expect, it } from 'vitest';
import { CreationLimiter, THROTTLE_BACKOFF, type CreationLimits } from '../src/kit/creation-limiter.js';
import { SandboxEnvironment } from '../src/kit/environment.js';
import type { CreateContext } from '../src/kit/transport.js';
import { parseEnvironmentSpec } from '../src/spec.js';
import { VirtualClock } from '../src/time/clock.js';
import { LocalTransport } from './support/local-transport.js';

/** A limiter whose creations end only when the test says; what began, and when, is recorded. */
function harness(limits: CreationLimits) {
  const clock = new VirtualClock();
  const limiter = new CreationLimiter(limits, clock);
  const begun: Array<{ id: number; at: number }> = [];
  const ends = new Map<number, { ok: () => void; fail: () => void }>();
  const results = new Map<number, Promise<string>>();
  const start = (id: number, opts: { signal?: AbortSignal; told?: string[] } = {}) => {
    const create = () =>
      new Promise<string>((resolve, reject) => {
        begun.push({ id, at: clock.now() });
        ends.set(id, { ok: () => resolve(`created ${id}`), fail: () => reject(new Error(`refused ${id}`)) });
      });
    const result = limiter.run(create, opts.signal, opts.told ? (why) => opts.told!.push(why) : undefined);
    result.catch(() => undefined);
    results.set(id, result);
    return result;
  };
  /** Let the granted creations begin (grants resolve in microtasks; one macrotask flushes them). */
  const flush = () => new Promise<void>((resolve) => setImmediate(resolve));
  /** End creation `id`; `then` 'flush' lets what that allowed begin (and virtual time run on to it). */
  const finish = async (id: number, ok = true, then: 'flush' | 'stay' = 'flush') => {
    const end = ends.get(id);
    if (!end) throw new Error(`creation ${id} never began`);
    if (ok) end.ok();
    else end.fail();
    await results.get(id)!.catch(() => undefined);
    if (then === 'flush') await flush();
  };
  const ids = () => begun.map((b) => b.id);
  /** Until creation `id` has begun (virtual time runs on while a timer is pending), bounded. */
  const began = async (id: number) => {
    for (let i = 0; i < 100 && !ids().includes(id); i++) await flush();
    if (!ids().includes(id)) throw new Error(`creation ${id} never began (began: ${ids().join(', ')})`);
  };
  return { clock, limiter, begun, start, finish, flush, ids, began };
}

describe('creation limiter: backing off when the engine throttles', () => {
  it('AIMD: a throttling halves the creations allowed at once; each success begun since adds one back, up to maxConcurrent', async () => {
    const h = harness({ maxConcurrent: 8 });
    for (let id = 0; id < 20; id++) void h.start(id);
    await h.flush();
    expect(h.limiter.active).toBe(8);
    expect(h.limiter.waiting).toBe(12);

    expect(h.limiter.throttled(1000)).toBe(1000);
    expect(h.limiter.concurrency).toBe(4);
    // Creations refused together are one overload: a second report halves nothing again.
    h.limiter.throttled(1000);
    expect(h.limiter.concurrency).toBe(4);

    // Creations begun before the overload succeeding prove nothing: the limit stays at 4, and
    // nothing new begins while 4 are in flight, even once the pause is over.
    for (let id = 0; id < 4; id++) await h.finish(id);
    await h.clock.sleep(1000);
    expect(h.ids()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(h.limiter.concurrency).toBe(4);
    for (let id = 4; id < 8; id++) await h.finish(id);
    expect(h.ids().slice(8)).toEqual([8, 9, 10, 11]);
    expect(h.limiter.active).toBe(4);
    expect(h.limiter.concurrency).toBe(4);

    // Each success begun under the lowered limit allows one more: 5, 6, 7, 8, and never more.
    await h.finish(8);
    expect([h.limiter.concurrency, h.limiter.active]).toEqual([5, 5]);
    await h.finish(9);
    expect([h.limiter.concurrency, h.limiter.active]).toEqual([6, 6]);
    await h.finish(10);
    await h.finish(11);
    expect([h.limiter.concurrency, h.limiter.active]).toEqual([8, 8]);
    expect(h.ids()).toEqual(Array.from({ length: 20 }, (_, i) => i));
    for (let id = 12; id < 20; id++) await h.finish(id);
    expect([h.limiter.concurrency, h.limiter.active, h.limiter.waiting]).toEqual([8, 0, 0]);
  });

  it("honours the engine's Retry-After: nothing begins before it ends; a waiter is told why it waits", async () => {
    const h = harness({ maxConcurrent: 4 });
    void h.start(0);
    void h.start(1);
    await h.flush();
    expect(h.limiter.throttled(1500)).toBe(1500);
    await h.finish(0, false);
    // A newcomer waits for the pause, not only for a slot, and hears why.
    const told: string[] = [];
    void h.start(2, { told });
    expect(told).toEqual(['throttled by the engine: waiting 1500 ms']);
    await h.finish(1);
    await h.began(2);
    expect(h.begun).toEqual([
      { id: 0, at: 0 },
      { id: 1, at: 0 },
      { id: 2, at: 1500 },
    ]);
  });

  it('without a Retry-After: 0.5 s, doubling per throttling in a row up to 10 s; a success starts it over', async () => {
    const h = harness({ maxConcurrent: 1 });
    const pauses: number[] = [];
    for (let id = 0; id < 7; id++) {
      void h.start(id);
      await h.began(id);
      pauses.push(h.limiter.throttled());
      await h.finish(id, false);
    }
    expect(pauses).toEqual([500, 1000, 2000, 4000, 8000, 10_000, 10_000]);
    expect(h.begun.map((b) => b.at)).toEqual([0, 500, 1500, 3500, 7500, 15_500, 25_500]);
    expect(THROTTLE_BACKOFF).toMatchObject({ initialMs: 500, maxMs: 10_000 });
    // One begun after the last pause succeeds: the next throttling waits 0.5 s again.
    void h.start(7);
    await h.began(7);
    await h.finish(7);
    void h.start(8);
    await h.began(8);
    expect(h.limiter.throttled()).toBe(500);
  });

  it('keeps the queue in order through a pause: an aborted waiter leaves it, a newcomer does not overtake, perSecond still spaces starts', async () => {
    const h = harness({ maxConcurrent: 2, perSecond: 4 });
    const gaveUp = new AbortController();
    const queued = Array.from({ length: 8 }, (_, id) => h.start(id, id === 4 ? { signal: gaveUp.signal } : {}));
    await h.began(1);
    expect(h.begun).toEqual([
      { id: 0, at: 0 },
      { id: 1, at: 250 },
    ]);
    h.limiter.throttled(2000);
    gaveUp.abort(new Error('deadline'));
    await expect(queued[4]).rejects.toThrow('deadline');
    expect(h.limiter.waiting).toBe(5);
    await h.finish(0, false);
    await h.finish(1, false, 'stay');
    // Nothing in flight now, and the limit allows one: a newcomer still queues behind the others.
    const told: string[] = [];
    void h.start(8, { told });
    expect(told).toEqual(['throttled by the engine: waiting 2000 ms']);
    // Each creation ends 100 ms after it began, so the limit (1, then 2) never holds a start back:
    // pacing and the pause alone set when each begins.
    const ended = new Set<number>();
    for (let i = 0; i < 200 && h.begun.length < 8; i++) {
      await h.clock.sleep(100);
      for (const { id } of h.begun.slice(2)) {
        if (ended.has(id)) continue;
        ended.add(id);
        await h.finish(id);
      }
    }
    expect(h.ids()).toEqual([0, 1, 2, 3, 5, 6, 7, 8]);
    expect(h.begun.slice(2).map((b) => b.at)).toEqual([2250, 2500, 2750, 3000, 3250, 3500]);
  });
});

describe('a transport reporting throttling through its start', () => {
  /** A local sandbox whose create the engine throttles once (with this Retry-After), then accepts. */
  class ThrottledOnce extends LocalTransport {
    constructor(
      readonly clock: VirtualClock,
      readonly retryAfterMs: number | undefined,
      readonly createdAt: number[],
    ) {
      super();
    }
    override async create(ctx: CreateContext): Promise<void> {
      if (this.retryAfterMs !== undefined) {
        ctx.progress({ phase: 'starting', throttled: { retryAfterMs: this.retryAfterMs } });
        await this.clock.sleep(this.retryAfterMs, ctx.signal);
      }
      this.createdAt.push(this.clock.now());
    }
  }

  it("reaches the backend's limiter: the other starts wait out the pause, and the phase event says why", async () => {
    const clock = new VirtualClock();
    const limiter = new CreationLimiter({ maxConcurrent: 4 }, clock);
    const createdAt: number[] = [];
    const env = (retryAfterMs?: number) =>
      new SandboxEnvironment({
        backend: 'local',
        id: `local-${Math.random().toString(16).slice(2, 8)}`,
        spec: parseEnvironmentSpec({ image: 'local:latest' }),
        transport: new ThrottledOnce(clock, retryAfterMs, createdAt),
        transfers: 'exec',
        limiter,
      });
    const throttled = env(2000);
    const details: Array<[string, string | undefined]> = [];
    throttled.events.on('phase', (phase, detail) => details.push([phase, detail]));
    const first = throttled.start();
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(details).toContainEqual(['starting', 'throttled by the engine: waiting 2000 ms']);
    expect(limiter.concurrency).toBe(1);
    const others = [env(), env()];
    await Promise.all([first, ...others.map((e) => e.start())]);
    // The throttled create and the two that waited (the pause, then the one slot left) all went through at 2000 ms.
    expect(createdAt).toEqual([2000, 2000, 2000]);
    await Promise.all([throttled, ...others].map((e) => e.teardown()));
  });
});
