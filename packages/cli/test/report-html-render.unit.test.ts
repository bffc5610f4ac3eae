// report.html as text, without a browser (report-html.test.ts opens it in one): the numbers it
// marks, how it escapes untrusted text, where the timeline puts attempts, and the edge cases (no
// tasks, no failures, no timestamps) that the real job does not reach.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { escapeHtml, jsonForScript } from '../src/report/html-escape.js';
import { REPORT_SCRIPT } from '../src/report/html-script.js';
import { renderReportHtml } from '../src/report/html.js';
import { layoutTimeline } from '../src/report/timeline-layout.js';
import type { JobData } from '../src/job/job-data.js';
import { FIXTURE_REPORT, PULL_MESSAGE, fixtureJob, withReport } from './support/job-fixture.js';

function metrics(html: string): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const [, name, text] of html.matchAll(/data-metric="([^"]+)">([^<]*)</g)) {
    found.set(name!, [...(found.get(name!) ?? []), text!]);
  }
  return found;
}

describe('renderReportHtml', () => {
  const html = renderReportHtml(fixtureJob());

  it('marks each number from report.json with where it came from', () => {
    const found = metrics(html);
    const expected: Record<string, string> = {
      total: '6',
      scored: '3',
      coverage: '0.500',
      taskFailures: '1',
      'infraFailed.total': '2',
      'infraFailed.transient': '0',
      'infraFailed.permanent': '1',
      'infraFailed.unclassified': '1',
      'notRun.total': '1',
      'notRun.deadline': '1',
      'notRun.cancelled': '0',
      attempts: '7',
      retries: '1',
      'score.mean': '0.500',
      'score.over': '3',
      'score.coverage': '0.500',
      'sandboxes.created': '6',
      'sandboxes.removed': '6',
      'tasks.0.reward': '1',
      'tasks.1.reward': '0.500',
    };
    for (const [type, n] of Object.entries(FIXTURE_REPORT.byType)) expected[`byType.${type}`] = String(n);
    for (const [category, n] of Object.entries(FIXTURE_REPORT.byCategory)) expected[`byCategory.${category}`] = String(n);
    expect(new Set(found.keys())).toEqual(new Set(Object.keys(expected)));
    for (const [name, texts] of found) for (const text of texts) expect(text, name).toBe(expected[name]);
  });

  it("names the agent's timeout harbor verified past in the attempt's bar", () => {
    const job = fixtureJob();
    const attempt = job.tasks.find((t) => t.summary.taskId === 'solve-pass')!.attempts[0]!;
    attempt.result!.exceptionInfo = { exceptionType: 'AgentTimeoutError', exceptionMessage: 'late', occurredAt: '2026-01-10T12:00:30.000Z' };
    expect(html).not.toContain('AgentTimeoutError');
    expect(renderReportHtml(job)).toContain('title="solve-pass · attempt 1 · chosen\nrewarded · reward 1 · AgentTimeoutError\n');
  });

  it('lists every invalid reason, and says Valid when there are none', () => {
    for (const reason of FIXTURE_REPORT.invalidReasons) expect(html).toContain(`<li>${escapeHtml(reason)}</li>`);
    const valid = renderReportHtml(withReport(fixtureJob(), { valid: true, invalidReasons: [] }));
    expect(valid).toContain('data-valid="true"');
    expect(valid).not.toContain('class="reasons"');
  });

  it('shows no mean when nothing had a reward', () => {
    const noScore = renderReportHtml(withReport(fixtureJob(), { score: undefined }));
    expect(noScore).not.toContain('data-metric="score.mean"');
    expect(noScore).toContain('no scored task has a numeric reward');
  });

  it('allows exactly its own script, and no request of any kind', () => {
    const policy = /http-equiv="Content-Security-Policy" content="([^"]+)"/.exec(html)?.[1]?.replace(/&#39;/g, "'");
    const hash = createHash('sha256').update(REPORT_SCRIPT).digest('base64');
    expect(policy).toContain("default-src 'none'");
    expect(policy).toContain(`script-src 'sha256-${hash}'`);
    expect(html).toContain(`<script>${REPORT_SCRIPT}</script>`);
    expect(html).not.toMatch(/\b(src|href)=/);
    expect(html).not.toMatch(/url\(/);
  });

  it('keeps hostile task ids and messages inert, in the markup and in the embedded JSON', () => {
    const idTail = '"><img src=x onerror=alert(1)>';
    const messageTail = '</script><script>alert(2)</script><!--';
    const hostile = renderReportHtml(fixtureJob({ rename: (id) => `${id}${idTail}`, message: (m) => `${m}${messageTail}` }));
    expect(hostile).not.toContain(idTail);
    expect(hostile).not.toContain('<img');
    expect(hostile).not.toContain(messageTail);
    expect(hostile.match(/<script/g)).toHaveLength(2);
    expect(hostile.match(/<\/script>/g)).toHaveLength(2);
    const json = /<script type="application\/json" id="berth-report-data">([^<]*)<\/script>/.exec(hostile)?.[1];
    const data = JSON.parse(json ?? 'null') as { attempts: Array<{ taskId: string; message?: string }> };
    expect(data.attempts[0]!.taskId).toBe(`solve-pass${idTail}`);
    expect(data.attempts.find((a) => a.taskId.startsWith('private-img'))?.message).toBe(`${PULL_MESSAGE}${messageTail}`);
  });

  it('renders a job with no tasks', () => {
    const empty: JobData = {
      jobDir: '/tmp/empty',
      report: {
        ...fixtureJob().report,
        tasks: [],
        report: {
          ...FIXTURE_REPORT,
          total: 0,
          scored: 0,
          coverage: 0,
          attempts: 0,
          retries: 0,
          byCategory: {},
          byType: {},
          score: undefined,
          invalidReasons: ['the run had no tasks'],
        },
      },
      tasks: [],
    };
    const page = renderReportHtml(empty);
    expect(page).toContain('The job had no tasks.');
    expect(page).toContain('No attempt failed.');
    expect(page).not.toContain('class="bar"');
  });
});

describe('jsonForScript', () => {
  it('reads back as the same value, with nothing that could close or bend the element', () => {
    const value = { text: '</script><!-- & > \u2028\u2029 "quoted"', n: [1, 2.5] };
    const json = jsonForScript(value);
    expect(json).not.toMatch(/[<>&\u2028\u2029]/);
    expect(JSON.parse(json)).toEqual(value);
  });
});

describe('layoutTimeline', () => {
  it('places attempts by their timestamps from the run start, and the rest after their task’s previous attempt', () => {
    const layout = layoutTimeline(fixtureJob());
    expect(layout.spanMs).toBe(95_000);
    expect(layout.tickMs).toBe(15_000);
    expect(layout.ticks.map((t) => t.label)).toEqual(['0', '15 s', '30 s', '45 s', '60 s', '75 s', '90 s']);
    const place = (task: string) => layout.rows.find((r) => r.task.summary.taskId === task)!.attempts.map((a) => [a.startMs, a.endMs, a.estimated, a.outcome]);
    expect(place('flaky-net')).toEqual([
      [0, 5_000, false, 'transient_infra'],
      [6_000, 50_000, false, 'rewarded'],
    ]);
    expect(place('weird-error')).toEqual([[0, 1_200, true, 'unclassified']]);
    expect(place('late-task')).toEqual([[40_000, 90_000, false, 'cancelled']]);
    expect(layout.rows.flatMap((r) => r.attempts.map((a) => a.index))).toEqual([0, 1, 2, 3, 4, 5, 6]);
  });

  it('lays out a job with no timestamps at all one attempt after another', () => {
    const job = fixtureJob();
    for (const task of job.tasks) {
      for (const attempt of task.attempts) {
        delete attempt.startedAt;
        delete attempt.endedAt;
      }
    }
    job.report.startedAt = 'not a date';
    job.report.endedAt = 'not a date';
    const layout = layoutTimeline(job);
    const flaky = layout.rows.find((r) => r.task.summary.taskId === 'flaky-net')!;
    expect(flaky.attempts.map((a) => [a.startMs, a.endMs, a.estimated])).toEqual([
      [0, 5_000, true],
      [5_000, 49_000, true],
    ]);
    expect(layout.spanMs).toBe(50_000);
  });
});
