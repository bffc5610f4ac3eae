import { basename } from 'node:path';
import { sandboxesOf, snapshotUseOf, type JobData } from '../job/job-data.js';
import { formatRatio, formatTimestamp } from './format.js';
import { escapeHtml, metric } from './html-escape.js';

/** The page's title block: which job, run by what, when. */
export function renderHeader(job: JobData): string {
  const r = job.report;
  const source = r.tasksDir ? ` · tasks from <code>${escapeHtml(r.tasksDir)}</code>` : '';
  return `<header class="page-head">
<div class="eyebrow">berth job report</div>
<h1>${escapeHtml(basename(job.jobDir) || job.jobDir)}</h1>
<p class="meta"><b>${escapeHtml(r.agent)}</b> on <b>${escapeHtml(r.backend)}</b> · ${escapeHtml(formatTimestamp(r.startedAt))} → ${escapeHtml(formatTimestamp(r.endedAt))}</p>
<p class="meta"><code>${escapeHtml(job.jobDir)}</code>${source}</p>
</header>`;
}

/**
 * Coverage, the mean beside it, and validity with its reasons: the three things to read before any
 * other number, and in that order (a mean without its coverage and validity is not a result).
 */
export function renderHeadline(job: JobData): string {
  const { report } = job.report;
  const coverage = `<div class="card hero" id="coverage" data-full="${report.coverage >= 1}">
<div class="hero-label">Coverage</div>
<div class="hero-value">${metric('coverage', formatRatio(report.coverage))}</div>
<div class="meter" role="img" aria-label="coverage"><span style="width:${(Math.min(1, Math.max(0, report.coverage)) * 100).toFixed(1)}%"></span></div>
<div class="hero-sub">${metric('scored', String(report.scored))} of ${metric('total', String(report.total))} tasks scored</div>
</div>`;
  const mean = report.score
    ? `<div class="card hero" id="mean">
<div class="hero-label">Mean ${escapeHtml(report.score.field)}</div>
<div class="hero-value">${metric('score.mean', formatRatio(report.score.mean))}</div>
<div class="hero-sub">over ${metric('score.over', String(report.score.over))} scored tasks<br>at coverage ${metric('score.coverage', formatRatio(report.score.coverage))}</div>
<div class="hero-note">Task failures count as 0; tasks not scored are not in it.</div>
</div>`
    : `<div class="card hero" id="mean">
<div class="hero-label">Mean reward</div>
<div class="hero-value hero-none">—</div>
<div class="hero-sub">no scored task has a numeric reward</div>
</div>`;
  const reasons = report.invalidReasons.map((reason) => `<li>${escapeHtml(reason)}</li>`).join('');
  const validity = report.valid
    ? `<div class="card hero validity" id="validity" data-valid="true">
<div class="hero-label">Validity</div>
<div class="hero-value verdict">Valid</div>
<div class="hero-sub">Every task was accounted for within the thresholds.</div>
</div>`
    : `<div class="card hero validity" id="validity" data-valid="false">
<div class="hero-label">Validity</div>
<div class="hero-value verdict">Invalid</div>
<ul class="reasons">${reasons}</ul>
</div>`;
  return `<section class="headline">${coverage}${mean}${validity}</section>`;
}

/** tone colours a tile whose number means trouble: 'bad' for infrastructure failures, 'warn' for tasks not run. */
function stat(label: string, value: string, sub = '', tone?: 'bad' | 'warn'): string {
  return `<div class="stat"${tone ? ` data-tone="${tone}"` : ''}><div class="stat-label">${escapeHtml(label)}</div><div class="stat-value">${value}</div><div class="stat-sub">${sub}</div></div>`;
}

/** Where every task went, and how many attempts that took. */
export function renderCounts(job: JobData): string {
  const { report } = job.report;
  const { infraFailed, notRun } = report;
  const stats = [
    stat('Tasks', metric('total', String(report.total))),
    stat(
      'Scored',
      metric('scored', String(report.scored)),
      `incl. ${metric('taskFailures', String(report.taskFailures))} task failure${report.taskFailures === 1 ? '' : 's'}`,
    ),
    stat(
      'Infra failed',
      metric('infraFailed.total', String(infraFailed.total)),
      `transient ${metric('infraFailed.transient', String(infraFailed.transient))} · permanent ${metric('infraFailed.permanent', String(infraFailed.permanent))} · unclassified ${metric('infraFailed.unclassified', String(infraFailed.unclassified))}`,
      infraFailed.total > 0 ? 'bad' : undefined,
    ),
    stat(
      'Not run',
      metric('notRun.total', String(notRun.total)),
      `deadline ${metric('notRun.deadline', String(notRun.deadline))} · cancelled ${metric('notRun.cancelled', String(notRun.cancelled))}`,
      notRun.total > 0 ? 'warn' : undefined,
    ),
    stat('Attempts', metric('attempts', String(report.attempts)), `${metric('retries', String(report.retries))} ${report.retries === 1 ? 'retry' : 'retries'}`),
  ];
  // Scored without a number to average: only worth a tile when it happened (it makes the run invalid).
  if (report.unscored > 0) stats.push(stat('Unscored', metric('unscored', String(report.unscored)), 'scored, no numeric reward', 'warn'));
  stats.push(sandboxStat(job));
  return `<section class="stats">${stats.join('')}</section>`;
}

/** Sandboxes created and removed; red when one was left (the section under the headline names it). */
function sandboxStat(job: JobData): string {
  const sandboxes = sandboxesOf(job);
  if (!sandboxes) return stat('Sandboxes', '—', 'not counted by the berth that wrote this job');
  const left = sandboxes.notRemoved.length;
  const snapshots = snapshotUseOf(job);
  const fromSnapshots = snapshots ? ` · ${metric('snapshots.attempts', String(snapshots.attempts))} from snapshots` : '';
  return stat(
    'Sandboxes',
    metric('sandboxes.created', String(sandboxes.created)),
    `created · ${metric('sandboxes.removed', String(sandboxes.removed))} removed${left > 0 ? ` · <b>${left} not removed</b>` : ''}${fromSnapshots}`,
    left > 0 ? 'bad' : undefined,
  );
}
