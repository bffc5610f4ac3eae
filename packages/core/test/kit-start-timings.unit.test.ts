// Start telemetry (Environment.startTimings) and the startup deadline counted from the creation
// slot, over the kit's SandboxEnvironment with an in-memory transport (LocalTransport: the
// "sandbox" is this machine) and a real CreationLimiter. The phase math (startPhases) on its own.
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { StartTimings } from '../src/start-timings.js';
import { START_MARKS, startPhases } from '../src/start-timings.js';
import { CancelledError, StartupTimeoutError } from '../src/errors.js';
import { CreationLimiter } from '../src/kit/creation-limiter.js';
import { SandboxEnvironment } from '../src/kit/environment.js';
import type { CreateContext, SandboxTransport, StartProgress } from '../src/kit/transport.js';
import { parseEnvironmentSpec } from '../src/spec.js';
import { LocalTransport } from './support/local-transport.js';

function environment(transport: SandboxTransport, opts: { startupMs?: number; limiter?: CreationLimiter } = {}): SandboxEnvironment {
  return new SandboxEnvironment({
    backend: 'local',
    id: `local-${Math.random().toString(16).slice(2, 8)}`,
    spec: parseEnvironmentSpec({ image: 'local:latest', ...(opts.startupMs ? { timeouts: { startupMs: opts.startupMs } } : {}) }),
    transport,
    transfers: 'exec',
    ...(opts.limiter ? { limiter: opts.limiter } : {}),
  });
}

/** A transport whose create() reports what it is given, then waits until the test lets it go. */
function heldTransport(reports: StartProgress[] = []) {
  let release: () => void = () => undefined;
  let entered: () => void = () => undefined;
  const inCreate = new Promise<void>((r) => (entered = r));
  const released = new Promise<void>((r) => (release = r));
  const transport = Object.assign(new LocalTransport(), {
    create: async (ctx: CreateContext) => {
      entered();
      for (const update of reports) ctx.progress(update);
      await released;
    },
  });
  return { transport, release, inCreate };
}

/** Polls `condition` every 5 ms; throws if it is not true within `ms`. */
async function until(condition: () => boolean, what: string, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > end) throw new Error(`never happened: ${what}`);
    await sleep(5);
  }
}

describe('startPhases', () => {
  it('takes each mark reached after the first, by time, minus the mark before it', () => {
    // Docker's order: pulled before accepted. Absent marks (scheduled, network) are skipped.
    const timings: StartTimings = { requestedAt: 1, marks: { requested: 0, admitted: 40, pulled: 540, accepted: 560, running: 700, firstCommand: 725 } };
    expect(startPhases(timings)).toEqual([
      { phase: 'admitted', ms: 40 },
      { phase: 'pulled', ms: 500 },
      { phase: 'accepted', ms: 20 },
      { phase: 'running', ms: 140 },
      { phase: 'firstCommand', ms: 25 },
    ]);
    const sum = startPhases(timings).reduce((a, p) => a + p.ms, 0);
    expect(sum).toBe(725);
  });

  it('orders marks reached at the same moment as START_MARKS does, and needs two marks for a phase', () => {
    expect(startPhases({ requestedAt: 1, marks: { requested: 0, running: 10, accepted: 10, admitted: 0 } })).toEqual([
      { phase: 'admitted', ms: 0 },
      { phase: 'accepted', ms: 10 },
      { phase: 'running', ms: 0 },
    ]);
    expect(startPhases({ requestedAt: 1, marks: { requested: 0 } })).toEqual([]);
    expect(startPhases({ requestedAt: 1, marks: {} })).toEqual([]);
    expect(START_MARKS[0]).toBe('requested');
  });
});

describe('the kit records a start', () => {
  it('requested, admitted, what the transport reached, running, then the first command only', async () => {
    const { transport, release } = heldTransport([{ reached: 'accepted' }, { reached: 'pulled' }, { reached: 'accepted' }]);
    const env = environment(transport);
    const told: string[] = [];
    env.events.on('reached', (mark, timings) => {
      told.push(mark);
      expect(timings.marks[mark]).toBeTypeOf('number');
    });
    const phaseAtRunning: (StartTimings | undefined)[] = [];
    env.events.on('phase', (phase) => {
      if (phase === 'running') phaseAtRunning.push(env.startTimings);
    });
    expect(env.startTimings).toBeUndefined();
    const started = env.start();
    release();
    await started;
    expect(told).toEqual(['requested', 'admitted', 'accepted', 'pulled', 'running']);
    // Whoever hears 'running' reads the timings with running in them.
    expect(phaseAtRunning[0]?.marks.running).toBeTypeOf('number');
    expect(env.startTimings?.marks.firstCommand).toBeUndefined();
    await env.exec('true');
    const after = env.startTimings!;
    expect(after.marks.requested).toBe(0);
    expect(told.at(-1)).toBe('firstCommand');
    expect(after.marks.firstCommand!).toBeGreaterThanOrEqual(after.marks.running!);
    await env.exec('true');
    expect(env.startTimings).toEqual(after);
    expect(told.filter((m) => m === 'firstCommand')).toHaveLength(1);
    expect(Math.abs(after.requestedAt - Date.now())).toBeLessThan(60_000);
    await env.teardown();
  });

  it("keeps the transport's own 'running' rather than the moment create() resolved", async () => {
    let stamp = 0;
    const transport = Object.assign(new LocalTransport(), {
      create: async (ctx: CreateContext) => {
        ctx.progress({ reached: 'running' });
        stamp = Date.now();
        await until(() => Date.now() - stamp >= 30, '30 ms after running');
      },
    });
    const env = environment(transport);
    await env.start();
    const { marks } = env.startTimings!;
    // create() went on for 30 ms after it said running; the kit's mark would be 30 ms later.
    expect(marks.running!).toBeLessThan(marks.admitted! + 25);
    await env.teardown();
  });

  it('a failed start keeps the marks it reached', async () => {
    const failing = Object.assign(new LocalTransport(), {
      create: async (ctx: CreateContext) => {
        ctx.progress({ reached: 'accepted' });
        throw new Error('the engine said no');
      },
    });
    const env = environment(failing);
    await expect(env.start()).rejects.toThrow('the engine said no');
    expect(Object.keys(env.startTimings!.marks)).toEqual(['requested', 'admitted', 'accepted']);
  });
});

describe('the startup deadline counts from the creation slot', () => {
  it('a start queued behind a full limiter longer than its startupMs is not timed out', async () => {
    const limiter = new CreationLimiter({ maxConcurrent: 1 });
    const first = heldTransport();
    const holder = environment(first.transport, { limiter });
    const holding = holder.start();
    await first.inCreate;
    const queued = environment(new LocalTransport(), { limiter, startupMs: 100 });
    const waiting = queued.start();
    await until(() => limiter.waiting === 1, 'the second start queued');
    // Queued for four times its deadline: the time in the queue is what is tested here.
    const since = Date.now();
    await until(() => Date.now() - since >= 400, '400 ms in the queue');
    first.release();
    await holding;
    await waiting;
    expect(queued.phase).toBe('running');
    const { marks } = queued.startTimings!;
    expect(marks.admitted! - marks.requested!).toBeGreaterThanOrEqual(400);
    await Promise.all([holder.teardown(), queued.teardown()]);
  });

  it('still ends a create that hangs after its slot, startupMs after the admission', async () => {
    const limiter = new CreationLimiter({ maxConcurrent: 1 });
    const first = heldTransport();
    const holder = environment(first.transport, { limiter });
    const holding = holder.start();
    await first.inCreate;
    const hung = Object.assign(new LocalTransport(), { create: () => new Promise<void>(() => undefined) });
    const queued = environment(hung, { limiter, startupMs: 150 });
    const failed = queued.start().catch((e: unknown) => e);
    await until(() => limiter.waiting === 1, 'the second start queued');
    const since = Date.now();
    await until(() => Date.now() - since >= 300, '300 ms in the queue');
    first.release();
    await holding;
    const error = await failed;
    expect(StartupTimeoutError.isInstance(error), String(error)).toBe(true);
    const { marks } = queued.startTimings!;
    expect(marks.admitted).toBeGreaterThanOrEqual(300);
    expect(marks.running).toBeUndefined();
    await Promise.all([holder.teardown(), queued.teardown()]);
  }, 15_000);

  it("the caller's signal still covers the queue: an abort there is a CancelledError and leaves the queue", async () => {
    const limiter = new CreationLimiter({ maxConcurrent: 1 });
    const first = heldTransport();
    const holder = environment(first.transport, { limiter });
    const holding = holder.start();
    await first.inCreate;
    const controller = new AbortController();
    const queued = environment(new LocalTransport(), { limiter, startupMs: 100 });
    const failed = queued.start({ signal: controller.signal }).catch((e: unknown) => e);
    await until(() => limiter.waiting === 1, 'the second start queued');
    controller.abort();
    const error = await failed;
    expect(CancelledError.isInstance(error), String(error)).toBe(true);
    expect(limiter.waiting).toBe(0);
    expect(queued.startTimings!.marks.admitted).toBeUndefined();
    first.release();
    await holding;
    await holder.teardown();
  });
});
