import type { HarborTaskSummary } from '@berth/harbor';
import type { JobData } from '../job/job-data.js';
import { formatDuration } from '../duration.js';
import { formatReward, humanize } from './format.js';
import { attrs, escapeHtml, metric } from './html-escape.js';
import { OUTCOME_STYLES, outcomeLabel, taskOutcome } from './outcome.js';
import { layoutTimeline, type PlacedAttempt, type TimelineLayout } from './timeline-layout.js';

/** Tooltips keep a long error message from covering the page. */
const TOOLTIP_MESSAGE_CHARS = 300;

const pct = (ms: number, span: number) => `${((ms / span) * 100).toFixed(3)}%`;

function barTitle(bar: PlacedAttempt): string {
  const { view } = bar;
  const lines = [
    `${view.taskId} · attempt ${view.attempt}${view.chosen ? ' · chosen' : ''}`,
    // The agent's timeout or non-zero exit harbor records and verifies past (exception_info), beside the result.
    [
      outcomeLabel(bar.outcome),
      view.reward !== undefined ? `reward ${formatReward(view.reward)}` : undefined,
      view.type,
      view.result?.exceptionInfo?.exceptionType,
    ]
      .filter(Boolean)
      .join(' · '),
    `${formatDuration(view.durationMs)}${bar.estimated ? ' (no timestamps: placed after the previous attempt)' : ''}`,
  ];
  if (view.message) {
    const message = view.message.length > TOOLTIP_MESSAGE_CHARS ? `${view.message.slice(0, TOOLTIP_MESSAGE_CHARS)}…` : view.message;
    lines.push(message);
  }
  return lines.join('\n');
}

function bar(placed: PlacedAttempt, layout: TimelineLayout): string {
  const { view } = placed;
  const width = Math.max(0, placed.endMs - placed.startMs);
  return `<button${attrs({
    type: 'button',
    class: 'bar',
    style: `left:${pct(placed.startMs, layout.spanMs)};width:${pct(width, layout.spanMs)}`,
    'data-outcome': placed.outcome,
    'data-attempt': view.attempt,
    'data-index': placed.index,
    'data-reward': view.reward !== undefined ? formatReward(view.reward) : undefined,
    'data-chosen': view.chosen ? 'true' : undefined,
    'data-estimated': placed.estimated ? 'true' : undefined,
    title: barTitle(placed),
    'aria-label': `${view.taskId} attempt ${view.attempt}: ${outcomeLabel(placed.outcome)}${view.chosen ? ', chosen' : ''}`,
  })}></button>`;
}

/** The task's final word, beside its row: the reward, or what stopped it. */
function result(summary: HarborTaskSummary, taskIndex: number): string {
  const outcome = taskOutcome(summary);
  if (summary.status === 'rewarded' && summary.reward !== undefined) {
    return `<span class="res" data-outcome="${outcome}" data-reward="${escapeHtml(formatReward(summary.reward))}"><span>reward ${metric(`tasks.${taskIndex}.reward`, formatReward(summary.reward), 'res-num')}</span></span>`;
  }
  const what =
    summary.status === 'not_run'
      ? `not run · ${summary.notRunReason ?? 'deadline'}`
      : humanize(summary.status === 'task_failed' ? 'task_failure' : (summary.failureCategory ?? 'unclassified'));
  const type = summary.failureType ? `<span class="res-type">${escapeHtml(summary.failureType)}</span>` : '';
  return `<span class="res" data-outcome="${outcome}"${attrs({ title: summary.failureMessage })}><span>${escapeHtml(what)}</span>${type}</span>`;
}

function legend(layout: TimelineLayout): string {
  const present = new Set(layout.rows.flatMap((r) => r.attempts.map((a) => a.outcome)));
  const items = OUTCOME_STYLES.map(
    (s) =>
      `<button${attrs({ type: 'button', class: 'legend-item', 'data-filter': s.outcome, 'aria-pressed': 'true', 'data-present': present.has(s.outcome) ? 'true' : 'false', title: `show or hide ${s.label} attempts` })}><span class="swatch" data-outcome="${s.outcome}"></span>${escapeHtml(s.label)}</button>`,
  );
  if (layout.rows.some((r) => r.attempts.some((a) => a.view.reward === 0))) {
    items.push('<span class="legend-item legend-static"><span class="swatch swatch-zero"></span>reward 0</span>');
  }
  items.push('<span class="legend-item legend-static"><span class="swatch swatch-chosen"></span>chosen attempt</span>');
  if (layout.rows.some((r) => r.attempts.some((a) => a.estimated))) {
    items.push('<span class="legend-item legend-static"><span class="swatch swatch-estimated"></span>no timestamps</span>');
  }
  return `<div class="legend">${items.join('')}</div>`;
}

function axis(layout: TimelineLayout): string {
  const ticks = layout.ticks.map((t) => `<span class="tick" style="left:${pct(t.ms, layout.spanMs)}">${escapeHtml(t.label)}</span>`).join('');
  return `<div class="tl-row tl-axis" aria-hidden="true"><div class="tl-label"></div><div class="tl-track">${ticks}</div><div class="tl-result"></div></div>`;
}

/** One row per task, one bar per attempt, by time since the run started. */
export function renderTimeline(job: JobData): string {
  const layout = layoutTimeline(job);
  const rows = layout.rows.map(({ task, taskIndex, attempts }) => {
    const { summary } = task;
    return (
      `<div${attrs({ class: 'tl-row', 'data-task': summary.taskId, 'data-status': summary.status })}>` +
      `<div class="tl-label"${attrs({ title: summary.taskId })}>${escapeHtml(summary.taskId)}</div>` +
      `<div class="tl-track">${attempts.map((a) => bar(a, layout)).join('')}</div>` +
      `<div class="tl-result">${result(summary, taskIndex)}</div>` +
      '</div>'
    );
  });
  const empty = layout.rows.length === 0 ? '<p class="empty">The job had no tasks.</p>' : '';
  return `<section class="card" id="timeline">
<div class="section-head"><h2>Attempts over time</h2>${legend(layout)}</div>
<div class="tl" style="--tick:${pct(layout.tickMs, layout.spanMs)}">${axis(layout)}${rows.join('\n')}</div>${empty}
<div class="detail" id="attempt-detail" hidden></div>
<p class="hint">Each bar is one attempt, placed by when it ran; click one for its steps. Click a legend entry to hide or show that outcome.</p>
</section>`;
}
