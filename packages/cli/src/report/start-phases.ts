import { START_MARKS, type PhaseStats, type RunReport, type StartPhaseStats } from '@berth/core';
import type { JobData } from '../job/job-data.js';
import { renderTable } from '../table.js';
import type { Paint } from './ansi.js';
import { formatDuration } from '../duration.js';
import { printable } from './format.js';
import { attrs, escapeHtml, metric } from './html-escape.js';

type Phase = Exclude<(typeof START_MARKS)[number], 'requested'>;

/** What each phase is, by the mark it ends at (the time since the mark the start reached before it). */
export const PHASE_WORDS: Record<Phase, string> = {
  admitted: 'queued for a creation slot (creation limits)',
  accepted: 'until the engine accepted the create',
  scheduled: 'until placed on a node',
  pulled: 'until the image was there',
  running: 'until it ran',
  network: "until network 'none' was proved",
  firstCommand: 'until the first command started',
};

/** One backend's phase, in START_MARKS order. */
export interface PhaseRow {
  backend: string;
  phase: Phase;
  stats: PhaseStats;
}

/**
 * report.json's report.startPhases as rows, backends in their order there and phases in
 * START_MARKS order; empty for a report without them (written by an older berth, or a run whose
 * trials started nothing), which then shows no table at all.
 */
export function startPhaseRows(job: JobData): PhaseRow[] {
  const byBackend: Record<string, StartPhaseStats> = (job.report.report as Partial<RunReport>).startPhases ?? {};
  const rows: PhaseRow[] = [];
  for (const [backend, phases] of Object.entries(byBackend)) {
    for (const mark of START_MARKS) {
      if (mark === 'requested') continue;
      const stats = phases[mark];
      if (stats && stats.count > 0) rows.push({ backend, phase: mark, stats });
    }
  }
  return rows;
}

/** `berth report`'s table of start phases: per backend and phase, how many starts and their p50/p95/p99. */
export function startPhaseLines(job: JobData, p: Paint): string[] {
  const rows = startPhaseRows(job);
  if (rows.length === 0) return [];
  const cells = rows.map(({ backend, phase, stats }) => [
    printable(backend),
    phase,
    String(stats.count),
    formatDuration(stats.p50),
    formatDuration(stats.p95),
    formatDuration(stats.p99),
    PHASE_WORDS[phase],
  ]);
  return [p.bold('sandbox start phases'), ...renderTable(['BACKEND', 'PHASE', 'STARTS', 'P50', 'P95', 'P99', 'TIME'], cells).split('\n')];
}

/** report.html's card of start phases, each number marked with its report.json path (data-metric); nothing without them. */
export function renderStartPhases(job: JobData): string {
  const rows = startPhaseRows(job);
  if (rows.length === 0) return '';
  const at = (backend: string, phase: Phase, field: keyof PhaseStats, value: number) => metric(`startPhases.${backend}.${phase}.${field}`, String(value));
  const body = rows
    .map(
      ({ backend, phase, stats }) =>
        `<tr${attrs({ 'data-backend': backend, 'data-phase': phase })}><td>${escapeHtml(backend)}</td><td><code>${phase}</code></td><td class="num">${at(backend, phase, 'count', stats.count)}</td>` +
        `<td class="num">${at(backend, phase, 'p50', stats.p50)}</td><td class="num">${at(backend, phase, 'p95', stats.p95)}</td><td class="num">${at(backend, phase, 'p99', stats.p99)}</td>` +
        `<td class="muted">${escapeHtml(PHASE_WORDS[phase])}</td></tr>`,
    )
    .join('\n');
  return `<section class="card" id="start-phases">
<div class="section-head"><h2>Sandbox start phases</h2></div>
<p class="muted">Each phase is the time from the mark a start reached before it to the mark it names, in ms: count, then p50, p95 and p99 (nearest rank) over every recorded start, failed ones included.</p>
<table class="phases">
<thead><tr><th>Backend</th><th>Phase</th><th class="num">Starts</th><th class="num">p50</th><th class="num">p95</th><th class="num">p99</th><th>Time</th></tr></thead>
<tbody>
${body}
</tbody>
</table>
</section>`;
}
