import type { AttemptView, JobData, TaskView } from '../job/job-data.js';
import { attemptOutcome, type AttemptOutcome } from './outcome.js';

export interface PlacedAttempt {
  view: AttemptView;
  /** Its place in jobAttempts(job), which the page's data shares. */
  index: number;
  outcome: AttemptOutcome;
  /** ms from the run's start. */
  startMs: number;
  endMs: number;
  /** No timestamps (result.json missing): placed after the task's previous attempt, by its duration. */
  estimated: boolean;
}

export interface TimelineRow {
  task: TaskView;
  /** Its index in report.json's tasks. */
  taskIndex: number;
  attempts: PlacedAttempt[];
}

export interface TimelineTick {
  ms: number;
  label: string;
}

export interface TimelineLayout {
  /** ms the axis spans (never 0). */
  spanMs: number;
  /** ms between ticks. */
  tickMs: number;
  ticks: TimelineTick[];
  rows: TimelineRow[];
}

const finite = (n: number | undefined): n is number => n !== undefined && Number.isFinite(n);

/**
 * The run's origin: its recorded start, or an earlier attempt's (a resumed run's report starts at
 * the last session, while reused attempts ran in earlier ones).
 */
function runOrigin(job: JobData): number {
  const starts = job.tasks.flatMap((t) => t.attempts.map((a) => a.startedAt)).filter(finite);
  const recorded = Date.parse(job.report.startedAt);
  const candidates = Number.isNaN(recorded) ? starts : [recorded, ...starts];
  return candidates.length > 0 ? Math.min(...candidates) : 0;
}

// Tick spacings a person reads without arithmetic: 100 ms ... 1 day.
const TICK_STEPS = [100, 200, 500, 1e3, 2e3, 5e3, 10e3, 15e3, 30e3, 60e3, 120e3, 300e3, 600e3, 900e3, 1800e3, 3600e3, 7200e3, 21600e3, 43200e3, 86400e3];
const MAX_TICKS = 8;

function tickLabel(ms: number, stepMs: number): string {
  if (ms === 0) return '0';
  if (stepMs < 1000) return `${(ms / 1000).toFixed(1)} s`;
  if (stepMs < 60e3) return `${Math.round(ms / 1000)} s`;
  if (stepMs < 3600e3) return `${Math.round(ms / 60e3)} min`;
  return `${+(ms / 3600e3).toFixed(1)} h`;
}

function ticks(spanMs: number): { tickMs: number; ticks: TimelineTick[] } {
  const tickMs = TICK_STEPS.find((step) => spanMs / step <= MAX_TICKS) ?? Math.ceil(spanMs / MAX_TICKS);
  const out: TimelineTick[] = [];
  for (let ms = 0; ms <= spanMs; ms += tickMs) out.push({ ms, label: tickLabel(ms, tickMs) });
  return { tickMs, ticks: out };
}

/**
 * Where each attempt's bar goes: by its startedAt/endedAt relative to the run's start; an attempt
 * without timestamps follows its task's previous attempt, as long as its recorded duration.
 */
export function layoutTimeline(job: JobData): TimelineLayout {
  const origin = runOrigin(job);
  let index = 0;
  let spanMs = Math.max(0, Date.parse(job.report.endedAt) - origin) || 0;
  const rows = job.tasks.map((task, taskIndex): TimelineRow => {
    let cursor = 0;
    const attempts = task.attempts.map((view): PlacedAttempt => {
      const { startedAt, endedAt } = view;
      const placed =
        finite(startedAt) && finite(endedAt)
          ? { startMs: startedAt - origin, endMs: Math.max(endedAt, startedAt) - origin, estimated: false }
          : { startMs: cursor, endMs: cursor + Math.max(0, view.durationMs), estimated: true };
      cursor = placed.endMs;
      spanMs = Math.max(spanMs, placed.endMs);
      return { view, index: index++, outcome: attemptOutcome(view), ...placed };
    });
    return { task, taskIndex, attempts };
  });
  spanMs = Math.max(spanMs, 1);
  return { spanMs, rows, ...ticks(spanMs) };
}
