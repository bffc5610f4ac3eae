// The terminal summary of a finished job, from a hand-built job (test/support/job-fixture.ts): its
// numbers and reasons, its alignment, colour only when asked, and untrusted text kept inert.
import { describe, expect, it } from 'vitest';
import { renderSummary } from '../src/report/summary.js';
import { FIXTURE_REPORT, fixtureJob, withReport } from './support/job-fixture.js';

const ESC = '\u001b';

/** The line whose text (after its indent) starts with `label` followed by two spaces of padding. */
function line(text: string, label: string): string {
  const found = text.split('\n').find((l) => l.trimStart().startsWith(`${label}  `) || l.trimStart() === label);
  if (found === undefined) throw new Error(`no line for ${JSON.stringify(label)} in:\n${text}`);
  return found;
}

/** Column where the right-aligned number of a row ends. */
function numberEnd(row: string): number {
  const match = /^\s+\S.*?\s{2,}(\S+)/.exec(row);
  if (!match) throw new Error(`no number in ${JSON.stringify(row)}`);
  return match.index + match[0].length;
}

describe('renderSummary', () => {
  const text = renderSummary(fixtureJob());

  it('puts validity and every reason first', () => {
    const lines = text.split('\n');
    expect(lines[0]).toBe('berth job /tmp/berth-jobs/fixture-job');
    expect(lines[1]).toBe('oracle on docker · 2026-01-10 12:00:00 UTC → 2026-01-10 12:01:35 UTC · 1 min 35 s');
    expect(lines[3]).toMatch(/^INVALID\b/);
    for (const reason of FIXTURE_REPORT.invalidReasons) expect(text).toContain(`  - ${reason}\n`);
    expect(text.indexOf('INVALID')).toBeLessThan(text.indexOf('coverage'));
  });

  it('shows coverage with the mean beside it', () => {
    expect(line(text, 'coverage')).toMatch(/^ {2}coverage {5}0\.500 {3}3 of 6 tasks scored$/);
    expect(line(text, 'mean reward')).toMatch(/^ {2}mean reward {2}0\.500 {3}over 3 scored tasks \(task failures as 0\) · coverage 0\.500$/);
  });

  it('accounts for every task and attempt', () => {
    expect(line(text, 'tasks')).toMatch(/\b6$/);
    expect(line(text, 'scored')).toMatch(/\b3 {3}incl\. task failures 1$/);
    expect(line(text, 'infra failed')).toMatch(/\b2 {3}transient 0 · permanent 1 · unclassified 1$/);
    expect(line(text, 'not run')).toMatch(/\b1 {3}deadline 1 · cancelled 0$/);
    expect(line(text, 'attempts')).toMatch(/\b7 {3}retries 1$/);
    expect(text).not.toContain('unscored');
  });

  it('right-aligns the numbers of a block in one column', () => {
    const ends = ['tasks', 'scored', 'infra failed', 'not run', 'attempts'].map((label) => numberEnd(line(text, label)));
    expect(new Set(ends).size).toBe(1);
    expect(numberEnd(line(text, 'coverage'))).toBe(numberEnd(line(text, 'mean reward')));
  });

  it('counts failed attempts by category and by type', () => {
    const categories = text.slice(text.indexOf('failed attempts by category'), text.indexOf('failed attempts by type'));
    for (const [category, n] of Object.entries(FIXTURE_REPORT.byCategory)) {
      expect(categories).toMatch(new RegExp(`\\n {2}${category.replace(/_/g, ' ')} +${n}\\n`));
    }
    const types = text.slice(text.indexOf('failed attempts by type'), text.indexOf('slowest tasks'));
    for (const [type, n] of Object.entries(FIXTURE_REPORT.byType)) expect(types).toMatch(new RegExp(`\\n {2}${type} +${n}\\n`));
  });

  it('names the slowest tasks, all attempts counted', () => {
    const start = text.indexOf('slowest tasks');
    const slowest = text.slice(start, text.indexOf('\n\n', start)).split('\n').slice(1);
    expect(slowest).toHaveLength(3);
    expect(slowest[0]).toMatch(/^ {2}late-task +50 s {3}not run \(deadline\), 1 attempt$/);
    expect(slowest[1]).toMatch(/^ {2}flaky-net +49 s {3}reward 0\.500, 2 attempts$/);
    expect(slowest[2]).toMatch(/^ {2}solve-pass +40 s {3}reward 1, 1 attempt$/);
  });

  it("lists every task, problems first: status, reward, attempts, the failure's type and first line", () => {
    const start = text.indexOf('\ntasks\n');
    const table = text
      .slice(start + 1)
      .trimEnd()
      .split('\n');
    expect(table[0]).toBe('tasks');
    expect(table[1]).toMatch(/^TASK +STATUS +REWARD +ATTEMPTS +FAILURE$/);
    expect(table.slice(2).map((l) => l.split(/ {2,}/).slice(0, 4))).toEqual([
      ['private-img', 'infra_failed', '—', '1'],
      ['weird-error', 'infra_failed', '—', '1'],
      ['late-task', 'not_run (deadline)', '—', '1'],
      ['crash-verifier', 'task_failed', '—', '1'],
      ['flaky-net', 'rewarded', '0.500', '2'],
      ['solve-pass', 'rewarded', '1', '1'],
    ]);
    expect(table.find((l) => l.startsWith('private-img'))).toMatch(
      /ImagePullError: pulling 127\.0\.0\.1:5000\/berth\/private:latest failed: no basic auth credentials$/,
    );
    const short = renderSummary(fixtureJob(), { taskRows: 2 });
    expect(short.trimEnd().split('\n').at(-1)).toBe('… and 4 more (--all-tasks lists every one; report.html has them all)');
  });

  it('uses colour only when asked, and the same text either way', () => {
    expect(text).not.toContain(ESC);
    const coloured = renderSummary(fixtureJob(), { color: true });
    expect(coloured).toContain(`${ESC}[31m`);
    expect(coloured.replace(/\u001b\[\d+m/g, '')).toBe(text);
  });

  it('says VALID, and shows no mean when nothing had a reward', () => {
    const valid = renderSummary(withReport(fixtureJob(), { valid: true, invalidReasons: [] }));
    expect(valid.split('\n')[3]).toBe('VALID');
    expect(valid).not.toContain('INVALID');
    const noScore = renderSummary(withReport(fixtureJob(), { score: undefined }));
    expect(line(noScore, 'mean reward')).toMatch(/—\s+no scored task has a numeric reward$/);
  });

  it('shows unscored tasks when there are some', () => {
    const unscored = renderSummary(withReport(fixtureJob(), { unscored: 2 }));
    expect(line(unscored, 'unscored')).toMatch(/\b2 {3}scored without a numeric reward$/);
  });

  it("counts the tasks whose agent timed out or exited non-zero and was verified anyway (harbor's exception_info), and names it in the table", () => {
    expect(text).not.toContain('agent errors');
    const job = fixtureJob();
    const task = (id: string) => job.tasks.find((t) => t.summary.taskId === id)!;
    const timedOut = {
      exceptionType: 'AgentTimeoutError' as const,
      exceptionMessage: 'the agent command did not finish within 2 s',
      occurredAt: '2026-01-10T12:00:30.000Z',
    };
    // Rewarded: in report.json. The verifier's failure after it: in the chosen attempt's result.json.
    task('solve-pass').summary.exceptionInfo = timedOut;
    task('crash-verifier').attempts[0]!.result!.exceptionInfo = timedOut;
    task('flaky-net').summary.exceptionInfo = { ...timedOut, exceptionType: 'NonZeroAgentExitCodeError', exceptionMessage: 'the agent command exited 3' };
    const shown = renderSummary(job);
    expect(line(shown, 'agent errors')).toMatch(/\b3 {3}AgentTimeoutError 2 · NonZeroAgentExitCodeError 1 · verified anyway, as harbor does$/);
    expect(numberEnd(line(shown, 'agent errors'))).toBe(numberEnd(line(shown, 'scored')));
    expect(shown.split('\n').find((l) => l.startsWith('solve-pass'))).toMatch(
      /rewarded +1 +1 +AgentTimeoutError: the agent command did not finish within 2 s$/,
    );
    // A task failure keeps the verifier's failure in its row.
    expect(shown.split('\n').find((l) => l.startsWith('crash-verifier'))).toMatch(/RewardFileMissing: the verifier wrote no reward$/);
  });

  it('says so when no attempt failed', () => {
    const clean = renderSummary(withReport(fixtureJob(), { byCategory: {}, byType: {} }));
    expect(clean).toContain('\nno failed attempts\n');
  });

  it('keeps escape sequences in task ids from acting on the terminal', () => {
    const hostile = renderSummary(fixtureJob({ rename: (id) => `${id}${ESC}[2J${ESC}]0;owned\u0007` }));
    expect(hostile).not.toContain(ESC);
    expect(hostile).not.toContain('\u0007');
    expect(hostile).toContain('late-task\\u{1b}[2J\\u{1b}]0;owned\\u{7}');
  });
});
