import { sandboxesOf, type JobData } from '../job/job-data.js';
import { attrs, escapeHtml, metric } from './html-escape.js';

/** Rows of the table of sandboxes left; past this the page says how many more report.json names. */
const MAX_ROWS = 200;

/**
 * The sandboxes the run could not remove, right under the headline when there are any: each one
 * named (its id on the backend, the backend, task, attempt, and the teardown's error), since each
 * may still be running and costing until a sweep removes it. Nothing when every one was removed.
 */
export function renderSandboxesLeft(job: JobData): string {
  const left = sandboxesOf(job)?.notRemoved ?? [];
  if (left.length === 0) return '';
  const rows = left
    .slice(0, MAX_ROWS)
    .map(
      (s) =>
        `<tr${attrs({ 'data-sandbox': s.id, 'data-task': s.taskId, 'data-attempt': s.attempt })}><td><code>${escapeHtml(s.id)}</code></td><td>${escapeHtml(s.backend)}</td><td><code>${escapeHtml(s.taskId)}</code></td><td class="num">${s.attempt}</td><td class="leak-error">${escapeHtml(s.error)}</td></tr>`,
    )
    .join('\n');
  const more = left.length > MAX_ROWS ? `<p class="muted">And ${left.length - MAX_ROWS} more; report.json names them all.</p>` : '';
  const title = `${metric('sandboxes.notRemoved.length', String(left.length))} sandbox${left.length === 1 ? '' : 'es'} not removed`;
  return `<section class="card leak" id="sandboxes-left" data-count="${left.length}">
<div class="section-head"><h2>${title}</h2></div>
<p class="leak-note">The run created these and their teardown failed: they may still be running, and costing. <code>berth sweep --dry-run</code> lists those still there; <code>berth sweep</code> removes them.</p>
<table class="leaks">
<thead><tr><th>Sandbox</th><th>Backend</th><th>Task</th><th class="num">Attempt</th><th>Teardown error</th></tr></thead>
<tbody>
${rows}
</tbody>
</table>${more}
</section>`;
}
