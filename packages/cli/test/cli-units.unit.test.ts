import { describe, expect, it } from 'vitest';
import { formatDuration, parseDuration } from '../src/duration.js';
import { groupFailures, normaliseMessage } from '../src/job/fingerprint.js';
import type { AttemptView } from '../src/job/job-data.js';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadSelected, globToRegExp } from '../src/task-filter.js';
import { clip, settledLine } from '../src/run/settled-line.js';
import { LiveDisplay } from '../src/run/live-display.js';
import { Writable } from 'node:stream';
import { writeDataset } from './support/dataset.js';

describe('durations', () => {
  it('parses what people write, and says what a valid one looks like otherwise', () => {
    expect(parseDuration('90s', '--x')).toBe(90_000);
    expect(parseDuration('1h30m', '--x')).toBe(5_400_000);
    expect(parseDuration('2h', '--x')).toBe(7_200_000);
    expect(parseDuration('1d', '--x')).toBe(86_400_000);
    expect(parseDuration('45', '--x')).toBe(45_000);
    expect(() => parseDuration('2 hours', '--older-than')).toThrow(/--older-than: "2 hours" is not a duration; write it like 90s, 30m, 2h or 1h30m/);
    expect(() => parseDuration('0s', '--x')).toThrow(/more than zero/);
    expect(formatDuration(850)).toBe('850 ms');
    expect(formatDuration(4200)).toBe('4.2 s');
    expect(formatDuration(65_000)).toBe('1 min 05 s');
    expect(formatDuration(3_723_000)).toBe('1 h 02 min');
  });
});

describe('--filter globs', () => {
  it('match whole task ids with * ? and classes', () => {
    expect(globToRegExp('django-*').test('django-1234')).toBe(true);
    expect(globToRegExp('django-*').test('xdjango-1')).toBe(false);
    expect(globToRegExp('t?.x').test('t1.x')).toBe(true);
    expect(globToRegExp('t?.x').test('t1-x')).toBe(false);
    expect(globToRegExp('[ab]-[!0]').test('a-1')).toBe(true);
    expect(globToRegExp('[ab]-[!0]').test('a-0')).toBe(false);
  });

  it('select tasks before they are read: a compose task or a helper folder elsewhere does not stop the selection', async () => {
    const root = await mkdtemp(join(tmpdir(), 'berth-cli-filter-'));
    try {
      await writeDataset(root, [
        { id: 'a-1', kind: 'pass' },
        { id: 'b-1', kind: 'pass' },
        { id: 'c-1', kind: 'pass' },
      ]);
      // A compose task berth refuses (a key it does not run), and a folder of shared scripts that is no task at all.
      await writeDataset(root, [{ id: 'compose-1', kind: 'pass' }]);
      await mkdir(join(root, 'compose-1', 'environment'), { recursive: true });
      await writeFile(join(root, 'compose-1', 'environment', 'docker-compose.yaml'), 'services:\n  db:\n    image: x\n    privileged: true\n');
      await mkdir(join(root, 'shared'));
      expect((await loadSelected(root, ['a-*', 'c-*'])).map((t) => t.id)).toEqual(['a-1', 'c-1']);
      // Without a filter every task is read, and the two that are not runnable say so.
      await expect(loadSelected(root, [])).rejects.toThrow(/2 of 5 tasks .* are invalid/s);
      await expect(loadSelected(root, ['zzz-*'])).rejects.toThrow(/--filter zzz-\* matches none of the tasks/);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe('failure fingerprints', () => {
  it('replace what varies between occurrences of one problem', () => {
    const a = normaliseMessage('sandbox berth-3f9a2c1d7e8b4a6f of django__django-11099 was lost: container exited (137) after 12.5 s', 'django__django-11099');
    const b = normaliseMessage('sandbox berth-0a1b2c3d4e5f6a7b of sympy__sympy-20590 was lost: container exited (137) after 3 s', 'sympy__sympy-20590');
    expect(a).toBe(b);
    expect(a).toBe('sandbox berth-<id> of <task> was lost: container exited (<n>) after <n> s');
    expect(normaliseMessage('pulling ghcr.io/org/img:v1 failed: Head "https://ghcr.io/v2/org/img/manifests/v1": denied')).toBe(
      'pulling <image> failed: Head "<url>": denied',
    );
    expect(normaliseMessage('connect ECONNREFUSED 10.0.0.12:6443')).toBe('connect ECONNREFUSED <addr>');
    expect(normaliseMessage('first line\nsecond line')).toBe('first line');
  });

  it('replace a task id only where it stands alone, never inside an image or another name', () => {
    const said = (id: string, image: string) =>
      normaliseMessage(`task ${id} (/data/tasks/${id}): pulling ${image} was refused; the image private-busybox needs credentials`, id);
    // The task "private" and the image "private-busybox": one problem, the image's name intact.
    const a = said('private', '127.0.0.1:5000/berth/private-busybox:cli');
    const b = said('other', '127.0.0.1:5000/berth/private-busybox:cli-2');
    expect(a).toBe(b);
    expect(a).toBe('task <task> (/data/tasks/<task>): pulling <image> was refused; the image private-busybox needs credentials');
  });

  it('group failed attempts, counting tasks and final failures', () => {
    const view = (taskId: string, attempt: number, type: string, message: string): AttemptView => ({
      taskId,
      attempt,
      durationMs: 1,
      status: 'failed',
      category: 'transient_infra',
      type,
      message,
      causes: [],
      chosen: false,
      dir: '',
    });
    const groups = groupFailures(
      [
        view('t1', 1, 'SandboxLostError', 'lost after 3 s'),
        view('t1', 2, 'SandboxLostError', 'lost after 9 s'),
        view('t2', 1, 'SandboxLostError', 'lost after 1 s'),
        view('t3', 1, 'StartupTimeoutError', 'no start in 60 s'),
      ],
      new Set(['t1#2']),
    );
    expect(groups.map((g) => [g.type, g.attempts, g.tasks, g.finalFor, g.exampleTasks])).toEqual([
      ['SandboxLostError', 3, 2, 1, ['t1', 't2']],
      ['StartupTimeoutError', 1, 1, 0, ['t3']],
    ]);
  });
});

describe('settled lines', () => {
  const attempt = (n: number, failed: boolean) => ({
    taskId: 't',
    attempt: n,
    startedAt: 0,
    endedAt: 1000,
    durationMs: 1000,
    status: failed ? ('failed' as const) : ('outcome' as const),
    ...(failed
      ? { failure: { category: 'transient_infra' as const, type: 'SandboxLostError', message: 'gone', retryable: true } }
      : { outcome: { reward: 1 } }),
  });
  it("count the attempts made (never 'attempt 1 of 1', which read like a limit of one) and name the chosen one after a retry", () => {
    const one = settledLine({ taskId: 't', status: 'scored', chosenAttempt: 1, outcome: { reward: 1 }, attempts: [attempt(1, false)] } as never, {
      settled: 1,
      total: 3,
    });
    expect(one).toBe('[1/3] t  rewarded 1  (1 attempt, 1.0 s)');
    const retried = settledLine(
      { taskId: 't', status: 'scored', chosenAttempt: 2, outcome: { reward: 1 }, attempts: [attempt(1, true), attempt(2, false)] } as never,
      { settled: 2, total: 3 },
    );
    expect(retried).toBe('[2/3] t  rewarded 1  (2 attempts, the 2nd chosen, 2.0 s)');
    // The agent timed out and was verified anyway (harbor's exception_info): the reward counts, the line says so.
    const late = settledLine(
      {
        taskId: 't',
        status: 'scored',
        chosenAttempt: 1,
        outcome: { reward: 1, exceptionInfo: { exceptionType: 'AgentTimeoutError', exceptionMessage: 'late', occurredAt: '' } },
        attempts: [attempt(1, false)],
      } as never,
      { settled: 3, total: 3 },
    );
    expect(late).toBe('[3/3] t  rewarded 1 (AgentTimeoutError)  (1 attempt, 1.0 s)');
    // A multi-step task: each step's reward, what went wrong in it, or that an earlier one stopped the run.
    const steps = [
      { name: 'scaffold', reward: 1 },
      { name: 'implement', reward: 0, exceptionType: 'AgentTimeoutError' },
      { name: 'document', skipped: true },
    ];
    const multi = settledLine({ taskId: 't', status: 'scored', chosenAttempt: 1, outcome: { reward: 0.5, steps }, attempts: [attempt(1, false)] } as never, {
      settled: 3,
      total: 3,
    });
    expect(multi).toBe('[3/3] t  rewarded 0.5 [scaffold 1, implement 0 AgentTimeoutError, document skipped]  (1 attempt, 1.0 s)');
  });

  it('cut a long line in the middle, keeping the end where berth says what to do', () => {
    const text = `ImagePullError: ${'x'.repeat(200)}; give --build-repository <registry/repo>`;
    const cut = clip(text, 80);
    expect(cut).toHaveLength(80);
    expect(cut.startsWith('ImagePullError: ')).toBe(true);
    expect(cut.endsWith('give --build-repository <registry/repo>')).toBe(true);
  });
});

describe('the live progress block', () => {
  it('keeps every count at 80 and 100 columns: the block wraps instead of cutting one out', () => {
    for (const columns of [80, 100, 160]) {
      let text = '';
      const out = Object.assign(
        new Writable({
          write(chunk, _encoding, done) {
            text += String(chunk);
            done();
          },
        }),
        { columns },
      );
      const display = new LiveDisplay(out, 300);
      display.progress({ total: 300, settled: 123, scored: 111, infraFailed: 7, notRun: 5, running: 4, attempts: 130 });
      display.stop();
      // The last drawing, without the cursor movements.
      const lines = text
        .replace(/\x1b\[\d*[FJ]/g, '')
        .trimEnd()
        .split('\n');
      for (const l of lines) expect(l.length, `${columns} columns: ${l}`).toBeLessThanOrEqual(columns - 1);
      const block = lines.join('\n');
      for (const count of ['123/300', 'scored 111', 'infra-failed 7', 'not run 5', 'retries 0', 'running 0', 'ETA ', 'elapsed ']) {
        expect(block, `${columns} columns`).toContain(count);
      }
      expect(block).not.toContain('…');
    }
  });
});
