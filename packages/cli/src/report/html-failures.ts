import type { AttemptView, CauseLink, JobData } from '../job/job-data.js';
import { humanize } from './format.js';
import { attrs, escapeHtml, metric } from './html-escape.js';
import { jobAttempts } from './html-data.js';
import { attemptOutcome } from './outcome.js';

/** Cause chains listed per type; past this, the page would grow without telling anyone more. */
const MAX_CHAINS_PER_TYPE = 100;

const byCount = (counts: Record<string, number>) => Object.entries(counts).sort(([a, x], [b, y]) => y - x || a.localeCompare(b));

function categoryChips(byCategory: Record<string, number>): string {
  const chips = byCount(byCategory).map(([category, n]) => {
    const outcome = attemptOutcome({ status: 'failed', category });
    return `<span class="chip"><span class="swatch" data-outcome="${outcome}"></span>${escapeHtml(humanize(category))}${metric(`byCategory.${category}`, String(n), 'chip-num')}</span>`;
  });
  return `<div class="chips" aria-label="failed attempts by category">${chips.join('')}</div>`;
}

function causeItem(link: CauseLink): string {
  const type = link.type && link.type !== link.name ? `<span class="cause-type">${escapeHtml(link.type)}</span>` : '';
  return `<li><span class="cause-name">${escapeHtml(link.name)}</span>${type}<div class="cause-msg">${escapeHtml(link.message)}</div></li>`;
}

/** One failed attempt's chain, outermost error first, as result.json recorded it. */
function chain(attempt: AttemptView): string {
  const head = `<div class="chain-head"><span class="chain-task">${escapeHtml(attempt.taskId)}</span><span class="chain-attempt">attempt ${attempt.attempt}</span><code class="chain-dir">${escapeHtml(attempt.dir)}/result.json</code></div>`;
  const body =
    attempt.causes.length > 0
      ? `<ol class="causes">${attempt.causes.map(causeItem).join('')}</ol>`
      : `<p class="muted">No result.json for this attempt${attempt.message ? `: ${escapeHtml(attempt.message)}` : ''}.</p>`;
  return `<div${attrs({ class: 'chain', 'data-task': attempt.taskId, 'data-attempt': attempt.attempt })}>${head}${body}</div>`;
}

function typeDetails(type: string, count: number, attempts: AttemptView[]): string {
  const categories = [...new Set(attempts.map((a) => a.category ?? 'unclassified'))];
  const outcome = attemptOutcome({ status: 'failed', ...(categories[0] ? { category: categories[0] } : {}) });
  const tasks = [...new Set(attempts.map((a) => a.taskId))];
  const shown = attempts.slice(0, MAX_CHAINS_PER_TYPE);
  const more = attempts.length > shown.length ? `<p class="muted">And ${attempts.length - shown.length} more; their result.json files hold the rest.</p>` : '';
  return `<details${attrs({ class: 'ftype', 'data-type': type })}>
<summary class="frow">
<span class="ftype-name"><span class="swatch" data-outcome="${outcome}"></span>${escapeHtml(type)}</span>
<span class="ftype-cat">${escapeHtml(categories.map(humanize).join(', ') || '—')}</span>
<span class="ftype-tasks"${attrs({ title: tasks.join(', ') })}>${escapeHtml(tasks.join(', '))}</span>
<span class="num">${metric(`byType.${type}`, String(count))}</span>
</summary>
<div class="chains">${shown.map(chain).join('')}${more}</div>
</details>`;
}

/** Failed attempts by category and by type; each type opens onto its attempts' cause chains. */
export function renderFailures(job: JobData): string {
  const { report } = job.report;
  const failed = jobAttempts(job).filter((a) => a.status === 'failed');
  const types = byCount(report.byType);
  const body =
    types.length === 0
      ? '<p class="empty">No attempt failed.</p>'
      : `${categoryChips(report.byCategory)}
<div class="ftable">
<div class="frow fhead" aria-hidden="true"><span>Error type</span><span>Category</span><span>Tasks</span><span class="num">Attempts</span></div>
${types
  .map(([type, n]) =>
    typeDetails(
      type,
      n,
      failed.filter((a) => a.type === type),
    ),
  )
  .join('\n')}
</div>
<p class="hint">Every failed attempt counts, retried ones included. Open a type for its cause chains, outermost error first.</p>`;
  return `<section class="card" id="failures"><div class="section-head"><h2>Failed attempts</h2></div>${body}</section>`;
}
