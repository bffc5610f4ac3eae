// How report.json's report.startPhases (per backend, per start phase: count, p50/p95/p99 in ms)
// reaches a person: report.html's table, each number marked with its report.json path, and
// `berth report`'s table; a report without them (an older berth, trials that started nothing)
// shows no table at all. From the hand-built job (test/support/job-fixture.ts), its startPhases
// made by core's buildRunReport from attempt records; report-html-sandboxes.test.ts does it from
// a real Docker run.
import { buildRunReport, type AttemptRecord, type StartTimings, type TaskRecord } from '@berth/core';
import { describe, expect, it } from 'vitest';
import { renderReportHtml } from '../src/report/html.js';
import { renderSummary } from '../src/report/summary.js';
import { fixtureJob, withReport } from './support/job-fixture.js';

const at = (marks: StartTimings['marks']): StartTimings => ({ requestedAt: 1_767_000_000_000, marks });

/** Two Docker starts and a Kubernetes one, as runTrials records them. */
function startPhases(backendName = 'k8s') {
  const attempt = (taskId: string, starts: AttemptRecord['starts']): TaskRecord => ({
    taskId,
    status: 'scored',
    chosenAttempt: 1,
    outcome: { reward: 1 },
    attempts: [{ taskId, attempt: 1, startedAt: 0, endedAt: 1, durationMs: 1, status: 'outcome', outcome: { reward: 1 }, starts }],
  });
  const tasks = [
    attempt('a', [
      { id: 'd1', backend: 'docker', timings: at({ requested: 0, admitted: 4, pulled: 1504, accepted: 1540, running: 1840, firstCommand: 1850 }) },
    ]),
    attempt('b', [{ id: 'd2', backend: 'docker', timings: at({ requested: 0, admitted: 0, pulled: 2, accepted: 30, running: 330, firstCommand: 342 }) }]),
    attempt('c', [
      { id: 'k1', backend: backendName, timings: at({ requested: 0, admitted: 0, accepted: 40, scheduled: 45, pulled: 945, running: 1445, network: 4445 }) },
    ]),
  ];
  return buildRunReport(tasks, { durationMs: 1 }).startPhases!;
}

/** The <section id="start-phases"> of a page, or undefined. */
function section(html: string): string | undefined {
  return /<section class="card" id="start-phases">[\s\S]*?<\/section>/.exec(html)?.[0];
}

describe('start phases in report.html', () => {
  it('a table per backend and phase, in START_MARKS order, each number marked with its report.json path', () => {
    const phases = startPhases();
    const html = section(renderReportHtml(withReport(fixtureJob(), { startPhases: phases })))!;
    expect(html).toBeDefined();
    const rows = [...html.matchAll(/<tr data-backend="([^"]+)" data-phase="([^"]+)">/g)].map((m) => `${m[1]} ${m[2]}`);
    expect(rows).toEqual([
      'docker admitted',
      'docker accepted',
      'docker pulled',
      'docker running',
      'docker firstCommand',
      'k8s admitted',
      'k8s accepted',
      'k8s scheduled',
      'k8s pulled',
      'k8s running',
      'k8s network',
    ]);
    expect(html).toContain('<span data-metric="startPhases.docker.pulled.count">2</span>');
    expect(html).toContain('<span data-metric="startPhases.docker.pulled.p50">2</span>');
    expect(html).toContain('<span data-metric="startPhases.docker.pulled.p95">1500</span>');
    expect(html).toContain('<span data-metric="startPhases.k8s.network.p99">3000</span>');
    // Every marked number is the report's own.
    for (const [, path, text] of html.matchAll(/data-metric="startPhases\.([^"]+)">([^<]*)</g)) {
      const [backend, phase, field] = path!.split('.');
      expect(String((phases as Record<string, Record<string, Record<string, number>>>)[backend!]![phase!]![field!]), path).toBe(text);
    }
  });

  it('no table for a report without them, as an older berth wrote it', () => {
    const html = renderReportHtml(fixtureJob());
    expect(section(html)).toBeUndefined();
    expect(html).not.toContain('startPhases.');
  });

  it('keeps a hostile backend name as text', () => {
    const html = renderReportHtml(withReport(fixtureJob(), { startPhases: startPhases('<img src=x onerror=alert(1)>') }));
    expect(html).not.toContain('<img');
    expect(section(html)).toContain('&lt;img src=x onerror=alert(1)&gt;');
  });
});

describe('start phases in berth report', () => {
  it('prints the table after the sandboxes, durations for a person', () => {
    const text = renderSummary(withReport(fixtureJob(), { startPhases: startPhases() }));
    const start = text.indexOf('sandbox start phases\n');
    expect(start).toBeGreaterThan(text.indexOf('sandboxes: '));
    const table = text.slice(start, text.indexOf('\n\n', start)).split('\n');
    expect(table[1]).toMatch(/^BACKEND +PHASE +STARTS +P50 +P95 +P99 +TIME$/);
    expect(table.slice(2).map((l) => l.split(/ {2,}/))).toEqual([
      ['docker', 'admitted', '2', '0 ms', '4 ms', '4 ms', 'queued for a creation slot (creation limits)'],
      ['docker', 'accepted', '2', '28 ms', '36 ms', '36 ms', 'until the engine accepted the create'],
      ['docker', 'pulled', '2', '2 ms', '1.5 s', '1.5 s', 'until the image was there'],
      ['docker', 'running', '2', '300 ms', '300 ms', '300 ms', 'until it ran'],
      ['docker', 'firstCommand', '2', '10 ms', '12 ms', '12 ms', 'until the first command started'],
      ['k8s', 'admitted', '1', '0 ms', '0 ms', '0 ms', 'queued for a creation slot (creation limits)'],
      ['k8s', 'accepted', '1', '40 ms', '40 ms', '40 ms', 'until the engine accepted the create'],
      ['k8s', 'scheduled', '1', '5 ms', '5 ms', '5 ms', 'until placed on a node'],
      ['k8s', 'pulled', '1', '900 ms', '900 ms', '900 ms', 'until the image was there'],
      ['k8s', 'running', '1', '500 ms', '500 ms', '500 ms', 'until it ran'],
      ['k8s', 'network', '1', '3.0 s', '3.0 s', '3.0 s', "until network 'none' was proved"],
    ]);
  });

  it('prints none for a report without them', () => {
    expect(renderSummary(fixtureJob())).not.toContain('start phases');
  });
});
