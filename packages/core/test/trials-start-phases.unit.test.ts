// Start telemetry through runTrials: each attempt's record carries its environments' start timings
// (journaled, so a resumed run keeps them), and report.startPhases gives per backend and phase the
// count and nearest-rank p50/p95/p99 of the phases' durations. Sandboxes are the kit's own
// SandboxEnvironment over a LocalTransport (no engine).
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  buildRunReport,
  createEvents,
  percentile,
  phaseStats,
  runTrials,
  type AttemptRecord,
  type RunEvents,
  type StartTimings,
  type TaskRecord,
  type TrialContext,
} from '../src/index.js';
import { SandboxEnvironment } from '../src/kit/environment.js';
import type { CreateContext } from '../src/kit/transport.js';
import { parseEnvironmentSpec } from '../src/spec.js';
import { LocalTransport } from './support/local-transport.js';

const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

describe('percentiles (nearest rank)', () => {
  it('is always one of the values: the smallest with p% at or below it', () => {
    const hundred = Array.from({ length: 100 }, (_, i) => i + 1);
    expect([50, 95, 99, 100].map((p) => percentile(hundred, p))).toEqual([50, 95, 99, 100]);
    const ten = [10, 20, 30, 40, 50, 60, 70, 80, 90, 1000];
    expect([percentile(ten, 50), percentile(ten, 95), percentile(ten, 99)]).toEqual([50, 1000, 1000]);
    // 95% of 13 is 12.35: the 13th value, not the 12th (rounding would say).
    const thirteen = Array.from({ length: 13 }, (_, i) => i + 1);
    expect([percentile(thirteen, 50), percentile(thirteen, 95)]).toEqual([7, 13]);
    expect(percentile([7], 99)).toBe(7);
    expect(percentile([], 50)).toBeNaN();
    expect(phaseStats([30, 10, 20])).toEqual({ count: 3, p50: 20, p95: 30, p99: 30 });
  });
});

function record(taskId: string, starts: AttemptRecord['starts']): TaskRecord {
  const attempt: AttemptRecord = { taskId, attempt: 1, startedAt: 0, endedAt: 1, durationMs: 1, status: 'outcome', outcome: { reward: 1 } };
  if (starts) attempt.starts = starts;
  return { taskId, status: 'scored', attempts: [attempt], chosenAttempt: 1, outcome: { reward: 1 } };
}

const at = (marks: StartTimings['marks']): StartTimings => ({ requestedAt: 1_700_000_000_000, marks });

describe('report.startPhases', () => {
  it('per backend and phase, from every recorded start; phases a backend never reached are absent', () => {
    const tasks = [
      record('a', [{ id: 'd1', backend: 'docker', timings: at({ requested: 0, admitted: 5, pulled: 105, accepted: 125, running: 325, firstCommand: 335 }) }]),
      record('b', [{ id: 'd2', backend: 'docker', timings: at({ requested: 0, admitted: 0, pulled: 1, accepted: 21, running: 221, firstCommand: 231 }) }]),
      record('c', [
        { id: 'k1', backend: 'k8s', timings: at({ requested: 0, admitted: 0, accepted: 50, scheduled: 60, pulled: 500, running: 900, network: 1900 }) },
        // A start that failed after its request was accepted: its one phase still counts.
        { id: 'k2', backend: 'k8s', timings: at({ requested: 0, admitted: 10, accepted: 70 }) },
      ]),
      // An attempt journaled by a berth without timings: nothing of it.
      record('d', undefined),
    ];
    const { startPhases } = buildRunReport(tasks, { durationMs: 1 });
    expect(Object.keys(startPhases!)).toEqual(['docker', 'k8s']);
    expect(startPhases!.docker).toEqual({
      admitted: { count: 2, p50: 0, p95: 5, p99: 5 },
      accepted: { count: 2, p50: 20, p95: 20, p99: 20 },
      pulled: { count: 2, p50: 1, p95: 100, p99: 100 },
      running: { count: 2, p50: 200, p95: 200, p99: 200 },
      firstCommand: { count: 2, p50: 10, p95: 10, p99: 10 },
    });
    // In START_MARKS order whatever order the backend reached them in.
    expect(Object.keys(startPhases!.docker!)).toEqual(['admitted', 'accepted', 'pulled', 'running', 'firstCommand']);
    expect(startPhases!.k8s).toEqual({
      admitted: { count: 2, p50: 0, p95: 10, p99: 10 },
      accepted: { count: 2, p50: 50, p95: 60, p99: 60 },
      scheduled: { count: 1, p50: 10, p95: 10, p99: 10 },
      pulled: { count: 1, p50: 440, p95: 440, p99: 440 },
      running: { count: 1, p50: 400, p95: 400, p99: 400 },
      network: { count: 1, p50: 1000, p95: 1000, p99: 1000 },
    });
  });

  it('is absent when no attempt recorded a start', () => {
    expect(buildRunReport([record('a', undefined)], { durationMs: 1 }).startPhases).toBeUndefined();
    expect('startPhases' in buildRunReport([record('a', undefined)], { durationMs: 1 })).toBe(false);
  });
});

describe('attempt records carry their starts', () => {
  it('from the environments the trial tracked, journaled, and kept by a resumed run', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'berth-starts-'));
    dirs.push(dir);
    const journal = join(dir, 'journal.jsonl');
    const trial = async (taskId: string, ctx: TrialContext) => {
      const transport = Object.assign(new LocalTransport(), {
        create: async (c: CreateContext) => {
          c.progress({ reached: 'pulled' });
          c.progress({ reached: 'accepted' });
        },
      });
      const env = new SandboxEnvironment({
        backend: 'local',
        id: `env-${taskId}-${ctx.attempt}`,
        spec: parseEnvironmentSpec({ image: 'local:latest' }),
        transport,
      });
      const never = new SandboxEnvironment({ backend: 'local', id: `idle-${taskId}`, spec: parseEnvironmentSpec({ image: 'local:latest' }), transport });
      ctx.sandboxes.track(env);
      ctx.sandboxes.track(never);
      await env.start();
      await env.exec('true');
      await ctx.sandboxes.teardown(env);
      return { reward: 1 };
    };
    // 'two' waits for a second session: the first stops once 'one' has ended.
    const stop = new AbortController();
    const events = createEvents<RunEvents>();
    events.on('attempt:end', () => stop.abort());
    const first = await runTrials(['one', 'two'], trial, { journal, concurrency: 1, signal: stop.signal, events });
    expect(first.tasks.map((t) => t.status)).toEqual(['scored', 'not_run']);
    const starts = first.tasks[0]!.attempts[0]!.starts!;
    expect(starts).toHaveLength(1);
    expect(starts[0]).toMatchObject({ id: 'env-one-1', backend: 'local' });
    expect(Object.keys(starts[0]!.timings.marks)).toEqual(['requested', 'admitted', 'pulled', 'accepted', 'running', 'firstCommand']);
    expect(Object.keys(first.report.startPhases!.local!)).toEqual(['admitted', 'accepted', 'pulled', 'running', 'firstCommand']);
    expect(first.report.startPhases!.local!.running!.count).toBe(1);

    const journaled = (await readFile(journal, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; record?: AttemptRecord });
    expect(journaled.find((l) => l.type === 'attempt')!.record!.starts).toEqual(starts);

    const second = await runTrials(['one', 'two'], trial, { journal });
    expect(second.resume).toMatchObject({ reusedAttempts: 1 });
    expect(second.tasks[0]!.attempts[0]!.starts).toEqual(starts);
    // one's start from the journal, two's from this session.
    expect(second.report.startPhases!.local!.running!.count).toBe(2);
  });
});
