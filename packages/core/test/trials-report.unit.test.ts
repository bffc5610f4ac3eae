// The report's accounting for outcomes it cannot average, and what counts as a retry.
import { describe, expect, it } from 'vitest';
import { buildRunReport } from '../src/trials/report.js';
import type { AttemptRecord, TaskRecord } from '../src/trials/types.js';

const attempt = (n: number, extra: Partial<AttemptRecord>): AttemptRecord => ({
  taskId: 't',
  attempt: n,
  startedAt: 0,
  endedAt: 1,
  durationMs: 1,
  status: 'outcome',
  ...extra,
});

describe('run report', () => {
  it('counts scored tasks without a numeric score field, and makes the run invalid by default', () => {
    const tasks: TaskRecord[] = [
      { taskId: 'a', status: 'scored', attempts: [attempt(1, { outcome: { reward: 1 } })], chosenAttempt: 1, outcome: { reward: 1 } },
      { taskId: 'b', status: 'scored', attempts: [attempt(1, { outcome: null })], chosenAttempt: 1, outcome: null },
      { taskId: 'c', status: 'scored', attempts: [attempt(1, { outcome: { passed: true } })], chosenAttempt: 1, outcome: { passed: true } },
    ];
    const report = buildRunReport(tasks, { durationMs: 5 });
    expect(report).toMatchObject({ scored: 3, unscored: 2, valid: false, score: { mean: 1, over: 1 } });
    expect(report.invalidReasons.join(' ')).toContain('2 scored task(s) have no numeric "reward"');
    expect(buildRunReport(tasks, { durationMs: 5, validity: { maxUnscored: 2 } }).valid).toBe(true);
  });

  it('an attempt after one the run stopped is not a retry', () => {
    const stopped = {
      category: 'cancelled' as const,
      type: 'CancelledError',
      message: 'stopped',
      unclassified: false,
      retryable: false,
      stoppedBy: 'cancelled' as const,
      error: { name: 'CancelledError', message: 'stopped' },
    };
    const lost = {
      category: 'transient_infra' as const,
      type: 'SandboxLostError',
      message: 'lost',
      unclassified: false,
      retryable: true,
      error: { name: 'SandboxLostError', message: 'lost' },
    };
    const tasks: TaskRecord[] = [
      {
        taskId: 'a',
        status: 'scored',
        attempts: [attempt(1, { status: 'failed', failure: stopped }), attempt(2, { status: 'failed', failure: lost }), attempt(3, { outcome: { reward: 0 } })],
        chosenAttempt: 3,
        outcome: { reward: 0 },
      },
    ];
    expect(buildRunReport(tasks, { durationMs: 1 })).toMatchObject({ attempts: 3, retries: 1 });
  });
});

describe('run events without installing anything else', () => {
  it('typed run events come from @berth/core itself (createEvents), no event library to install', async () => {
    const { createEvents, runTrials } = await import('../src/index.js');
    const events = createEvents<import('../src/index.js').RunEvents>();
    const settled: string[] = [];
    events.on('task:settled', (task) => settled.push(task.taskId));
    await runTrials(['a', 'b'], async () => ({ reward: 1 }), { events });
    expect(settled.sort()).toEqual(['a', 'b']);
  });
});

describe('duration across a resume', () => {
  it("is every session's time, not only the resumed part's", async () => {
    const { mkdtemp, rm } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { runTrials, VirtualClock } = await import('../src/index.js');
    const dir = await mkdtemp(join(tmpdir(), 'berth-duration-'));
    try {
      const journal = join(dir, 'journal.jsonl');
      const run = (clock: InstanceType<typeof VirtualClock>, deadlineMs?: number) =>
        runTrials(
          ['a', 'b', 'c'],
          async (_task, { signal }) => {
            await clock.sleep(1000, signal);
            return { reward: 1 };
          },
          { journal, clock, concurrency: 1, ...(deadlineMs ? { deadlineMs } : {}) },
        );
      const first = await run(new VirtualClock(), 1500);
      expect(first.report.durationMs).toBe(1500);
      // Resumed much later: the time in between is not the run's.
      const second = await run(new VirtualClock(1_000_000));
      expect(second.report.scored).toBe(3);
      expect(second.report.durationMs).toBe(1500 + 2000);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
