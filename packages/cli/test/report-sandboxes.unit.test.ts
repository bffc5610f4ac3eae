// How a job's sandbox accounting (report.json's report.sandboxes) reaches a person: report.html's
// tile and, when a sandbox was left behind, the section under the headline naming each one; the
// terminal summary of `berth report` and the lines `berth run` ends with. From the hand-built job
// (test/support/job-fixture.ts); report-html-sandboxes.test.ts does it from a real Docker run.
import type { SandboxAccounting, SandboxNotRemoved } from '@berth/core';
import { describe, expect, it } from 'vitest';
import type { JobData } from '../src/job/job-data.js';
import { paint } from '../src/report/ansi.js';
import { renderReportHtml } from '../src/report/html.js';
import { MAX_NAMED_SANDBOXES, sandboxLines } from '../src/report/sandbox-lines.js';
import { renderSummary } from '../src/report/summary.js';
import { runSummaryLines, sandboxesLeftLines } from '../src/run/run-summary.js';
import { fixtureJob, withReport } from './support/job-fixture.js';

const LEFT: SandboxNotRemoved = {
  id: 'berth-0b7e-leaky',
  backend: 'docker',
  taskId: 'flaky-net',
  attempt: 2,
  error: 'removing the container failed: (HTTP code 500) server error',
};

function leaky(notRemoved: SandboxNotRemoved[] = [LEFT]): JobData {
  return withReport(fixtureJob(), { sandboxes: { created: 6, removed: 6 - notRemoved.length, notRemoved } });
}

/** The <section id="sandboxes-left"> of a page, or undefined. */
function leftSection(html: string): string | undefined {
  return /<section class="card leak" id="sandboxes-left"[\s\S]*?<\/section>/.exec(html)?.[0];
}

describe('report.html', () => {
  it('shows the counts in a tile, and no section of leftovers when every sandbox was removed', () => {
    const html = renderReportHtml(fixtureJob());
    expect(html).toContain('<div class="stat-label">Sandboxes</div><div class="stat-value"><span data-metric="sandboxes.created">6</span>');
    expect(html).toContain('<span data-metric="sandboxes.removed">6</span> removed');
    expect(leftSection(html)).toBeUndefined();
    expect(html).not.toContain('not removed');
  });

  it('names every sandbox not removed right under the headline, its tile in red', () => {
    const html = renderReportHtml(leaky());
    const section = leftSection(html);
    expect(section).toBeDefined();
    expect(html.indexOf('id="sandboxes-left"')).toBeGreaterThan(html.indexOf('id="validity"'));
    expect(html.indexOf('id="sandboxes-left"')).toBeLessThan(html.indexOf('class="stats"'));
    expect(section).toContain('<span data-metric="sandboxes.notRemoved.length">1</span> sandbox not removed');
    expect(section).toContain(
      '<tr data-sandbox="berth-0b7e-leaky" data-task="flaky-net" data-attempt="2"><td><code>berth-0b7e-leaky</code></td><td>docker</td><td><code>flaky-net</code></td><td class="num">2</td>',
    );
    expect(section).toContain(LEFT.error);
    expect(section).toContain('<code>berth sweep</code> removes them');
    expect(html).toMatch(/<div class="stat" data-tone="bad"><div class="stat-label">Sandboxes<\/div>.*<b>1 not removed<\/b>/);
  });

  it('keeps hostile ids and messages as text', () => {
    const hostile = { ...LEFT, id: 'x"><img src=y onerror=alert(1)>', error: '</section><script>alert(2)</script>' };
    const html = renderReportHtml(leaky([hostile]));
    expect(html).not.toContain('<img');
    expect(html).not.toContain('<script>alert');
    expect(leftSection(html)).toContain('&lt;/section&gt;&lt;script&gt;alert(2)&lt;/script&gt;');
  });

  it('says a job from before berth counted sandboxes was not counted, rather than showing zeros', () => {
    const old = fixtureJob();
    delete (old.report.report as Partial<typeof old.report.report>).sandboxes;
    const html = renderReportHtml(old);
    expect(html).toContain('not counted by the berth that wrote this job');
    expect(html).not.toContain('data-metric="sandboxes.');
    expect(renderSummary(old)).toContain('sandboxes: not counted (this report.json was written by an older berth)');
  });
});

describe('the terminal', () => {
  it('berth report: the counts when all were removed', () => {
    expect(renderSummary(fixtureJob())).toContain('\nsandboxes: 6 created, 6 removed\n');
  });

  it('berth report: each sandbox left named, with what removes it', () => {
    const text = renderSummary(leaky());
    expect(text).toContain(
      'sandboxes: 6 created, 5 removed, 1 NOT removed:\n' +
        '  - berth-0b7e-leaky (docker) · task flaky-net, attempt 2: removing the container failed: (HTTP code 500) server error\n' +
        '  `berth sweep --dry-run` lists those still there; `berth sweep` removes them\n',
    );
  });

  it('names the first ones and counts the rest when many were left, in red only with colour', () => {
    const many = Array.from({ length: MAX_NAMED_SANDBOXES + 3 }, (_, i) => ({ ...LEFT, id: `left-${i}` }));
    const account: SandboxAccounting = { created: many.length, removed: 0, notRemoved: many };
    const lines = sandboxLines(account, paint(false));
    expect(lines.filter((l) => l.startsWith('  - left-'))).toHaveLength(MAX_NAMED_SANDBOXES);
    expect(lines).toContain('  ... and 3 more (report.json names them all)');
    expect(sandboxLines(account, paint(true))[0]).toContain('\u001b[31m\u001b[1m23 NOT removed');
    expect(lines[0]).not.toContain('\u001b');
  });

  it('berth run ends by naming what it left, before what its own sweep then removed, and says nothing when all were removed', () => {
    const swept = ['removed 1 sandbox(es) of this run whose teardown had failed'];
    const lines = runSummaryLines({ report: leaky().report.report }, '/tmp/job', swept);
    const at = lines.indexOf('sandboxes: 6 created, 5 removed, 1 NOT removed:');
    expect(at).toBeGreaterThan(lines.indexOf('valid: NO'));
    expect(lines.slice(at + 1, at + 3)).toEqual([
      '  - berth-0b7e-leaky (docker) · task flaky-net, attempt 2: removing the container failed: (HTTP code 500) server error',
      '  `berth sweep --dry-run` lists those still there; `berth sweep` removes them',
    ]);
    expect(lines.slice(at + 3)).toEqual([...swept, 'report: berth report /tmp/job']);

    const clean = runSummaryLines({ report: fixtureJob().report.report }, '/tmp/job', []);
    expect(clean.join('\n')).not.toContain('sandboxes');
    expect(clean.at(-1)).toBe('report: berth report /tmp/job');
    expect(sandboxesLeftLines({ report: fixtureJob().report.report })).toEqual([]);
  });

  it('keeps control characters in a message inert', () => {
    const lines = sandboxLines({ created: 1, removed: 0, notRemoved: [{ ...LEFT, error: 'boom\u001b[2Jcleared' }] }, paint(false));
    expect(lines.join('\n')).not.toContain('\u001b');
    expect(lines[1]).toContain('boom\\u{1b}[2Jcleared');
  });
});

describe('attempts started from task snapshots (snapshotSetup)', () => {
  /** The fixture with its first two tasks' first attempts started from two snapshots. */
  function snapshotted(): JobData {
    const job = fixtureJob();
    const tasks = job.report.tasks.map((t, i) =>
      i < 2 ? { ...t, attempts: t.attempts.map((a, j) => (j === 0 ? { ...a, snapshot: `berth-snapshot/task-${i}:abc` } : a)) } : t,
    );
    return { ...job, report: { ...job.report, tasks } };
  }

  it('berth report says how many attempts started from how many snapshots; nothing when none did', () => {
    const all = fixtureJob().report.tasks.flatMap((t) => t.attempts).length;
    expect(renderSummary(snapshotted())).toContain(`snapshots: 2 of ${all} attempts started from a task's snapshot (2 snapshots, --snapshot-setup)`);
    expect(renderSummary(fixtureJob())).not.toContain('snapshots:');
  });

  it("report.html's sandboxes tile counts them", () => {
    expect(renderReportHtml(snapshotted())).toContain('<span data-metric="snapshots.attempts">2</span> from snapshots');
    expect(renderReportHtml(fixtureJob())).not.toContain('from snapshots');
  });
});
