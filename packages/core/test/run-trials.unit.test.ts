import { mkdtemp, readFile, rm, writeFile, appendFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  ConfigError,
  ImagePullError,
  SandboxLostError,
  TaskFailure,
  VirtualClock,
  createEvents,
  runTrials,
  type AttemptRecord,
  type RunEvents,
  type RunResult,
  type TrialContext,
} from '../src/index.js';

// ------------------------------------------------------------------ deterministic randomness

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A number in [0,1) fixed by (seed, task, attempt): the same attempt behaves the same in every run. */
function draw(seed: number, taskId: string, attempt: number, salt = 0): number {
  let h = seed ^ (attempt * 0x9e3779b1) ^ salt;
  for (let i = 0; i < taskId.length; i++) h = Math.imul(h ^ taskId.charCodeAt(i), 0x01000193);
  return mulberry32(h)();
}

type Kind = 'success' | 'task_failure' | 'transient' | 'permanent' | 'unclassified';
interface Mix {
  success: number;
  task_failure: number;
  transient: number;
  permanent: number;
  unclassified: number;
}

function kindFor(mix: Mix, u: number): Kind {
  const total = mix.success + mix.task_failure + mix.transient + mix.permanent + mix.unclassified;
  let x = u * total;
  for (const k of ['success', 'task_failure', 'transient', 'permanent', 'unclassified'] as const) {
    if (x < mix[k]) return k;
    x -= mix[k];
  }
  return 'success';
}

interface Invocation {
  taskId: string;
  attempt: number;
  kind: Kind;
  reward?: number;
}

/** A trial whose behaviour per (task, attempt) comes from the seed, and that takes virtual time. */
function seededTrial(seed: number, mix: Mix, clock: VirtualClock, log: Invocation[], flipRewards = false) {
  return async (taskId: string, ctx: TrialContext): Promise<{ reward: number }> => {
    const kind = kindFor(mix, draw(seed, taskId, ctx.attempt));
    const reward0 = draw(seed, taskId, ctx.attempt, 7) < 0.5 ? 0 : 1;
    const reward = flipRewards ? 1 - reward0 : reward0;
    await clock.sleep(10 + Math.floor(draw(seed, taskId, ctx.attempt, 3) * 500), ctx.signal);
    log.push({ taskId, attempt: ctx.attempt, kind, ...(kind === 'success' ? { reward } : {}) });
    switch (kind) {
      case 'success':
        return { reward };
      case 'task_failure':
        throw new TaskFailure({ message: 'no reward file', kind: 'RewardFileMissing' });
      case 'transient':
        throw new Error('Failed to add tests directory to environment.', { cause: new SandboxLostError({ message: 'sandbox vanished', backend: 'sim' }) });
      case 'permanent':
        throw new ImagePullError({ message: 'no basic auth credentials', image: 'ghcr.io/x/y', reason: 'unauthorized', backend: 'sim' });
      default:
        throw new TypeError('something nobody classified');
    }
  };
}

const ids = (n: number) => Array.from({ length: n }, (_, i) => `task-${String(i).padStart(4, '0')}`);
const isUsable = (a: AttemptRecord) => a.status === 'outcome' || a.failure?.category === 'task_failure';

function checkInvariants(result: RunResult, log: Invocation[], maxAttempts: number): void {
  const { report, tasks } = result;
  expect(report.scored + report.infraFailed.total + report.notRun.total).toBe(report.total);
  expect(report.infraFailed.transient + report.infraFailed.permanent + report.infraFailed.unclassified).toBe(report.infraFailed.total);
  expect(report.notRun.deadline + report.notRun.cancelled).toBe(report.notRun.total);
  expect(report.attempts).toBe(tasks.reduce((n, t) => n + t.attempts.length, 0));
  expect(report.coverage).toBeCloseTo(report.total ? report.scored / report.total : 0, 12);
  // No invocation that finished is missing from the records: nothing is lost.
  const recorded = new Set(tasks.flatMap((t) => t.attempts.map((a) => `${a.taskId}#${a.attempt}`)));
  for (const inv of log) expect(recorded.has(`${inv.taskId}#${inv.attempt}`)).toBe(true);
  for (const t of tasks) {
    const firstUsable = t.attempts.findIndex(isUsable);
    if (firstUsable >= 0) {
      expect(t.status).toBe('scored');
      // The chosen trial is the first usable one, and nothing ran after it.
      expect(t.chosenAttempt).toBe(t.attempts[firstUsable]!.attempt);
      expect(t.attempts.length).toBe(firstUsable + 1);
    } else {
      expect(t.status).not.toBe('scored');
    }
    // Attempt numbers are 1..n with no gaps.
    expect(t.attempts.map((a) => a.attempt)).toEqual(t.attempts.map((_, i) => i + 1));
    expect(t.attempts.filter((a) => !a.failure?.stoppedBy).length).toBeLessThanOrEqual(maxAttempts);
    // A permanent or unclassified failure is never retried.
    t.attempts.forEach((a, i) => {
      if (a.failure && !a.failure.retryable && !a.failure.stoppedBy) expect(i).toBe(t.attempts.length - 1);
    });
  }
}

const MIXES: Array<[string, Mix]> = [
  ['healthy', { success: 90, task_failure: 8, transient: 2, permanent: 0, unclassified: 0 }],
  ['flaky infrastructure', { success: 40, task_failure: 10, transient: 50, permanent: 0, unclassified: 0 }],
  ['mostly broken (seed 004: 456 of 520)', { success: 8, task_failure: 4, transient: 80, permanent: 8, unclassified: 0 }],
  ['all permanent', { success: 0, task_failure: 0, transient: 0, permanent: 1, unclassified: 0 }],
  ['all transient', { success: 0, task_failure: 0, transient: 1, permanent: 0, unclassified: 0 }],
  ['everything at once', { success: 30, task_failure: 20, transient: 30, permanent: 10, unclassified: 10 }],
];

describe('runTrials over 1,000 seeded tasks', () => {
  for (const [name, mix] of MIXES) {
    for (const seed of [1, 2, 3]) {
      it(`${name}, seed ${seed}: exact accounting, nothing lost, first usable chosen`, async () => {
        const clock = new VirtualClock();
        const log: Invocation[] = [];
        const result = await runTrials(ids(1000), seededTrial(seed, mix, clock, log), {
          maxAttempts: 3,
          concurrency: 16,
          clock,
          random: mulberry32(seed),
          backoff: { initialMs: 100, maxMs: 2000 },
          validity: { minCoverage: 0.9 },
        });
        checkInvariants(result, log, 3);
        expect(result.report.total).toBe(1000);
        expect(result.report.notRun.total).toBe(0);
        expect(log.length).toBe(result.report.attempts);
        // Expected accounting computed independently from the seed.
        let scored = 0;
        let permanent = 0;
        for (const id of ids(1000)) {
          for (let a = 1; a <= 3; a++) {
            const k = kindFor(mix, draw(seed, id, a));
            if (k === 'success' || k === 'task_failure') {
              scored++;
              break;
            }
            if (k === 'permanent') {
              permanent++;
              break;
            }
            if (k === 'unclassified') break;
          }
        }
        expect(result.report.scored).toBe(scored);
        expect(result.report.infraFailed.permanent).toBe(permanent);
        if (permanent > 0) expect(result.report.valid).toBe(false);
      });
    }
  }

  it('with a deadline: accounting still adds up and unfinished tasks are not_run, not zeros', async () => {
    for (const seed of [4, 5]) {
      const clock = new VirtualClock();
      const log: Invocation[] = [];
      const result = await runTrials(ids(1000), seededTrial(seed, MIXES[1]![1], clock, log), {
        maxAttempts: 3,
        concurrency: 8,
        deadlineMs: 20_000,
        clock,
        random: mulberry32(seed),
        backoff: { initialMs: 100 },
      });
      checkInvariants(result, log, 3);
      expect(result.report.notRun.deadline).toBeGreaterThan(0);
      expect(result.report.valid).toBe(false);
      expect(result.report.invalidReasons.join(' ')).toMatch(/coverage .* under/);
      const stopped = result.tasks.flatMap((t) => t.attempts).filter((a) => a.failure?.stoppedBy === 'deadline');
      // Eight at a time past a 20 s virtual deadline: some were in flight when it came.
      expect(stopped.length, 'attempts stopped by the deadline').toBeGreaterThan(0);
      for (const a of stopped) expect(a.failure?.category).toBe('cancelled');
      expect(clock.now()).toBeLessThan(20_000 + 1000);
    }
  });

  it('selection is independent of reward: flipping every reward flips scores, never choices', async () => {
    const run = async (flip: boolean) => {
      const clock = new VirtualClock();
      return runTrials(ids(1000), seededTrial(9, MIXES[2]![1], clock, [], flip), { maxAttempts: 3, concurrency: 16, clock, random: mulberry32(9) });
    };
    const [a, b] = await Promise.all([run(false), run(true)]);
    expect(b.tasks.map((t) => [t.taskId, t.status, t.chosenAttempt, t.attempts.length])).toEqual(
      a.tasks.map((t) => [t.taskId, t.status, t.chosenAttempt, t.attempts.length]),
    );
    for (let i = 0; i < a.tasks.length; i++) {
      const ra = a.tasks[i]!.outcome as { reward: number } | undefined;
      const rb = b.tasks[i]!.outcome as { reward: number } | undefined;
      if (ra) expect(rb!.reward).toBe(1 - ra.reward);
    }
  });

  it('a first usable attempt that scored 0 keeps 0, though a later attempt would have scored 1', async () => {
    const calls: number[] = [];
    const result = await runTrials(
      ['t'],
      async (_t, ctx) => {
        calls.push(ctx.attempt);
        return { reward: ctx.attempt === 1 ? 0 : 1 };
      },
      { maxAttempts: 5 },
    );
    expect(calls).toEqual([1]);
    expect(result.tasks[0]).toMatchObject({ status: 'scored', chosenAttempt: 1, outcome: { reward: 0 } });
    // and after a transient failure, the first usable one (0) is kept over a later 1
    const calls2: number[] = [];
    const result2 = await runTrials(
      ['t'],
      async (_t, ctx) => {
        calls2.push(ctx.attempt);
        if (ctx.attempt === 1) throw new SandboxLostError({ message: 'gone' });
        return { reward: ctx.attempt === 2 ? 0 : 1 };
      },
      { maxAttempts: 5, backoff: { initialMs: 1 } },
    );
    expect(calls2).toEqual([1, 2]);
    expect(result2.tasks[0]).toMatchObject({ status: 'scored', chosenAttempt: 2, outcome: { reward: 0 } });
    // a task failure is usable too: not retried in the hope of a better reward
    const result3 = await runTrials(
      ['t'],
      async (_t, ctx) => {
        if (ctx.attempt === 1) throw new TaskFailure({ message: 'tests failed', kind: 'VerifierFailed' });
        return { reward: 1 };
      },
      { maxAttempts: 5 },
    );
    expect(result3.tasks[0]).toMatchObject({ status: 'scored', chosenAttempt: 1, failure: { type: 'VerifierFailed' } });
    expect(result3.report).toMatchObject({ scored: 1, taskFailures: 1, score: { mean: 0, over: 1 } });
  });
});

describe('runTrials retries', () => {
  it('fires for tasks whose only result is an infra failure (seed 004: a result file is not health)', async () => {
    const clock = new VirtualClock();
    const result = await runTrials(
      ids(520),
      async (id, ctx) => {
        // The first attempt of nearly every case dies on infrastructure, but "has a result".
        if (ctx.attempt === 1 && Number(id.slice(5)) % 8 !== 0) throw new SandboxLostError({ message: 'Sandbox not found' });
        await clock.sleep(5);
        return { reward: 1 };
      },
      { clock, maxAttempts: 3, concurrency: 32, random: () => 0.5 },
    );
    expect(result.report).toMatchObject({ total: 520, scored: 520, coverage: 1, valid: true, retries: 455 });
  });

  it('backs off exponentially with jitter, capped, and honours retry-after hints', async () => {
    const clock = new VirtualClock();
    const events = createEvents<RunEvents>();
    const delays: number[] = [];
    events.on('retry:scheduled', (e) => delays.push(e.delayMs));
    await runTrials(
      ['a'],
      async () => {
        throw new SandboxLostError({ message: 'gone' });
      },
      { clock, events, maxAttempts: 5, random: () => 0, backoff: { initialMs: 100, multiplier: 3, maxMs: 1000, jitter: 0.5 } },
    );
    expect(delays).toEqual([100, 300, 900, 1000]);
    const jittered: number[] = [];
    const ev2 = createEvents<RunEvents>();
    ev2.on('retry:scheduled', (e) => jittered.push(e.delayMs));
    await runTrials(
      ['a'],
      async () => {
        throw new ImagePullError({ message: 'slow down', image: 'x', reason: 'rate_limited', retryAfterMs: 5000 });
      },
      { clock: new VirtualClock(), events: ev2, maxAttempts: 3, random: () => 0.99, backoff: { initialMs: 100, jitter: 1 } },
    );
    expect(jittered).toEqual([5000, 5000]);
  });

  it('retryOn decides; unclassified errors are not retried by default', async () => {
    let calls = 0;
    const result = await runTrials(
      ['a'],
      async () => {
        calls++;
        throw new Error('weird');
      },
      { maxAttempts: 3 },
    );
    expect(calls).toBe(1);
    expect(result.report).toMatchObject({ unclassified: 1, valid: false, infraFailed: { unclassified: 1 } });
    calls = 0;
    await runTrials(
      ['a'],
      async () => {
        calls++;
        throw new Error('weird');
      },
      { maxAttempts: 3, retryOn: (f) => f.unclassified, backoff: { initialMs: 1 } },
    );
    expect(calls).toBe(3);
  });
});

describe('runTrials cancellation', () => {
  it('stops new attempts, lets running ones settle, records them as cancelled', async () => {
    const controller = new AbortController();
    const clock = new VirtualClock();
    const started: string[] = [];
    const result = await runTrials(
      ids(50),
      async (id, ctx) => {
        started.push(id);
        if (started.length === 10) controller.abort();
        await clock.sleep(100, ctx.signal);
        return { reward: 1 };
      },
      { clock, concurrency: 10, signal: controller.signal },
    );
    expect(started.length).toBe(10);
    expect(result.report.notRun).toMatchObject({ total: 50, cancelled: 50 });
    expect(result.report.scored + result.report.infraFailed.total + result.report.notRun.total).toBe(50);
    const attempts = result.tasks.flatMap((t) => t.attempts);
    expect(attempts).toHaveLength(10);
    for (const a of attempts) expect(a.failure).toMatchObject({ category: 'cancelled', stoppedBy: 'cancelled' });
    expect(result.report.valid).toBe(false);
  });

  it('an outcome that arrives while stopping is kept', async () => {
    const controller = new AbortController();
    const result = await runTrials(
      ['a', 'b'],
      async (id) => {
        if (id === 'a') {
          controller.abort();
          return { reward: 1 };
        }
        return { reward: 0 };
      },
      { concurrency: 1, signal: controller.signal },
    );
    expect(result.tasks[0]).toMatchObject({ status: 'scored', outcome: { reward: 1 } });
    expect(result.tasks[1]).toMatchObject({ status: 'not_run', notRunReason: 'cancelled', attempts: [] });
  });
});

describe('runTrials events and validation', () => {
  it('emits every event with consistent counts', async () => {
    const events = createEvents<RunEvents>();
    const counts: Record<string, number> = {};
    for (const name of ['attempt:start', 'attempt:end', 'retry:scheduled', 'task:settled', 'run:progress', 'run:end'] as const) {
      events.on(name, () => (counts[name] = (counts[name] ?? 0) + 1));
    }
    let last: unknown;
    events.on('run:progress', (p) => (last = p));
    const result = await runTrials(
      ids(20),
      async (id, ctx) => {
        if (ctx.attempt === 1 && id.endsWith('3')) throw new SandboxLostError({ message: 'x' });
        return { reward: 1 };
      },
      { events, backoff: { initialMs: 1 } },
    );
    expect(counts['attempt:start']).toBe(result.report.attempts);
    expect(counts['attempt:end']).toBe(result.report.attempts);
    expect(counts['retry:scheduled']).toBe(2);
    expect(counts['task:settled']).toBe(20);
    expect(counts['run:end']).toBe(1);
    expect(last).toMatchObject({ total: 20, settled: 20, scored: 20 });
  });

  it('refuses bad options and duplicate ids clearly', async () => {
    await expect(runTrials(['a', 'a'], async () => ({ reward: 1 }))).rejects.toThrow(/appears twice/);
    await expect(runTrials(['a'], async () => ({ reward: 1 }), { maxAttempts: 0 })).rejects.toThrow(ConfigError);
    await expect(runTrials([{ x: 1 }], async () => ({ reward: 1 }))).rejects.toThrow(/need an id/);
    await expect(runTrials(['a'], async () => ({ reward: 1 }), { deadlineMs: -5 })).rejects.toThrow(/deadlineMs/);
  });

  it('an empty run is invalid, never a clean score', async () => {
    const result = await runTrials([], async () => ({ reward: 1 }));
    expect(result.report).toMatchObject({ total: 0, valid: false });
  });
});

describe('runTrials journal', () => {
  const dirs: string[] = [];
  const journalPath = async () => {
    const d = await mkdtemp(join(tmpdir(), 'berth-journal-'));
    dirs.push(d);
    return join(d, 'run.jsonl');
  };
  afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

  const scenario = (log: Invocation[], clock: VirtualClock, stopAfter?: { count: number; controller: AbortController }) => {
    const inner = seededTrial(11, MIXES[1]![1], clock, log);
    return async (id: string, ctx: TrialContext) => {
      if (stopAfter && log.length >= stopAfter.count) stopAfter.controller.abort();
      return inner(id, ctx);
    };
  };
  const summary = (r: RunResult) => ({
    ...r.report,
    durationMs: 0,
    tasks: r.tasks.map((t) => ({
      id: t.taskId,
      status: t.status,
      chosen: t.chosenAttempt,
      outcome: t.outcome,
      attempts: t.attempts.map((a) => [a.attempt, a.status, a.failure?.type]),
    })),
  });

  const opts = (clock: VirtualClock) => ({ clock, concurrency: 8, random: mulberry32(3), backoff: { initialMs: 10 } });

  it('a crash at any point: the resumed run ends exactly like an uninterrupted one, nothing run twice', async () => {
    const fullPath = await journalPath();
    const reference = await runTrials(ids(200), scenario([], new VirtualClock()), { ...opts(new VirtualClock()), journal: fullPath });
    const full = await readFile(fullPath);
    const cuts = [1, 0.1, 0.37, 0.5, 0.81, 0.99].map((f) => Math.floor(full.length * f));
    for (const cut of cuts) {
      // What a process killed at this byte would leave behind, torn line included.
      const path = await journalPath();
      await writeFile(path, full.subarray(0, Math.max(cut, full.indexOf(10) + 1)));
      const log: Invocation[] = [];
      const resumed = await runTrials(ids(200), scenario(log, new VirtualClock()), { ...opts(new VirtualClock()), journal: path });
      expect(summary(resumed)).toEqual(summary(reference));
      const reused = new Set(
        (await readFile(path, 'utf8'))
          .split('\n')
          .filter((l) => l.includes('"type":"attempt"'))
          .map((l) => {
            const r = (JSON.parse(l) as { record: AttemptRecord }).record;
            return `${r.taskId}#${r.attempt}`;
          }),
      );
      // Everything the resumed process ran is new, and together they are the whole run.
      expect(log.length + resumed.resume!.reusedAttempts).toBe(reference.report.attempts);
      expect(reused.size).toBe(reference.report.attempts);
    }
  });

  it('a cancelled run resumes: settled attempts are reused, stopped ones run again', async () => {
    const path = await journalPath();
    const firstLog: Invocation[] = [];
    const controller = new AbortController();
    const clock1 = new VirtualClock();
    const partial = await runTrials(ids(200), scenario(firstLog, clock1, { count: 120, controller }), {
      ...opts(clock1),
      journal: path,
      signal: controller.signal,
    });
    expect(partial.report.notRun.cancelled).toBeGreaterThan(0);
    const secondLog: Invocation[] = [];
    const clock2 = new VirtualClock();
    const resumed = await runTrials(ids(200), scenario(secondLog, clock2), { ...opts(clock2), journal: path });
    const firstDone = new Set(partial.tasks.flatMap((t) => t.attempts.filter((a) => !a.failure?.stoppedBy).map((a) => `${a.taskId}#${a.attempt}`)));
    for (const inv of secondLog) expect(firstDone.has(`${inv.taskId}#${inv.attempt}`)).toBe(false);
    expect(resumed.resume?.reusedAttempts).toBe(partial.report.attempts);
    expect(resumed.report.notRun.total).toBe(0);
    checkInvariants(resumed, [...firstLog, ...secondLog], 3);
    // Every usable attempt of the first run is still the chosen one.
    for (const t of partial.tasks.filter((x) => x.status === 'scored')) {
      expect(resumed.tasks.find((x) => x.taskId === t.taskId)?.chosenAttempt).toBe(t.chosenAttempt);
    }
  });

  it('tolerates a torn last line and continues attempt numbers', async () => {
    const path = await journalPath();
    let calls = 0;
    await runTrials(
      ['a'],
      async () => {
        calls++;
        throw new SandboxLostError({ message: 'gone' });
      },
      { journal: path, maxAttempts: 2, backoff: { initialMs: 1 } },
    );
    expect(calls).toBe(2);
    await appendFile(path, '{"type":"attempt","record":{"taskId":"a","attem');
    // More attempts are allowed now? No: same options; the torn line is ignored, the task is decided.
    const again = await runTrials(['a'], async () => ({ reward: 1 }), { journal: path, maxAttempts: 2 });
    expect(again.tasks[0]).toMatchObject({ status: 'infra_failed', attempts: [{ attempt: 1 }, { attempt: 2 }] });
    expect(again.resume).toEqual({ reusedAttempts: 2, interruptedAttempts: 0, changedTasks: [] });
    const text = await readFile(path, 'utf8');
    expect(text.endsWith('\n')).toBe(true);
  });

  it('counts attempts that started but never settled as interrupted, and runs them', async () => {
    const path = await journalPath();
    await runTrials(['a', 'b'], async () => ({ reward: 1 }), { journal: path });
    const header = (await readFile(path, 'utf8')).split('\n')[0]!;
    const fresh = await journalPath();
    await writeFile(fresh, `${header}\n${JSON.stringify({ type: 'start', taskId: 'b', attempt: 1, at: 0 })}\n`);
    const calls: string[] = [];
    const result = await runTrials(
      ['a', 'b'],
      async (id, ctx) => {
        calls.push(`${id}#${ctx.attempt}`);
        return { reward: 1 };
      },
      { journal: fresh },
    );
    expect(result.resume).toEqual({ reusedAttempts: 0, interruptedAttempts: 1, changedTasks: [] });
    expect(calls).toEqual(['a#1', 'b#1']);
  });

  it('refuses a journal from another run, and a corrupt one', async () => {
    const path = await journalPath();
    await runTrials(['a', 'b'], async () => ({ reward: 1 }), { journal: path });
    await expect(runTrials(['a', 'b', 'c'], async () => ({ reward: 1 }), { journal: path })).rejects.toThrow(
      /different run: tasks \(2 tasks there, 3 here; new: c\)/,
    );
    await expect(runTrials(['a', 'b'], async () => ({ reward: 1 }), { journal: path, maxAttempts: 5 })).rejects.toThrow(/maxAttempts \(3 there, 5 here\)/);
    const lines = (await readFile(path, 'utf8')).split('\n');
    lines[1] = '{not json';
    await writeFile(path, lines.join('\n'));
    await expect(runTrials(['a', 'b'], async () => ({ reward: 1 }), { journal: path })).rejects.toThrow(/corrupt at line 2/);
  });
});

describe('runTrials bookkeeping failures', () => {
  it('a listener that throws stops the run and rejects runTrials, without crashing the process', async () => {
    const events = createEvents<RunEvents>();
    events.on('attempt:end', (r) => {
      if (r.taskId === 'task-0003') throw new Error('listener bug');
    });
    let ran = 0;
    await expect(
      runTrials(
        ids(50),
        async () => {
          ran++;
          return { reward: 1 };
        },
        { events, concurrency: 2 },
      ),
    ).rejects.toThrow('listener bug');
    expect(ran).toBeLessThan(50);
  });

  it('a cyclic cause chain is serialised, not a stack overflow', async () => {
    const a = new SandboxLostError({ message: 'outer' });
    const b = new Error('middle', { cause: a });
    Object.defineProperty(a, 'cause', { value: b });
    const result = await runTrials(
      ['t'],
      async () => {
        throw a;
      },
      { maxAttempts: 1 },
    );
    expect(result.tasks[0]?.failure?.error.cause?.cause?.message).toContain('cycle');
  });
});
