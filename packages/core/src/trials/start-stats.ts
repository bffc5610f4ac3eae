import { START_MARKS, startPhases } from '../start-timings.js';
import type { PhaseStats, StartPhaseStats, TaskRecord } from './types.js';

/**
 * The p-th percentile of ascending `sorted` values by nearest rank: the smallest value with at
 * least p% of the values at or below it (so always one of the values: p99 of 10 starts is the
 * slowest, not a number between two). NaN for no values.
 */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1]!;
}

/** count, p50, p95 and p99 of some durations, in any order. */
export function phaseStats(durations: readonly number[]): PhaseStats {
  const sorted = [...durations].sort((a, b) => a - b);
  return { count: sorted.length, p50: percentile(sorted, 50), p95: percentile(sorted, 95), p99: percentile(sorted, 99) };
}

/**
 * RunReport.startPhases: every recorded start of every attempt, its phases (startPhases) gathered
 * per backend and phase. Undefined when no attempt recorded a start.
 */
export function startPhaseStats(tasks: readonly TaskRecord[]): Record<string, StartPhaseStats> | undefined {
  const byBackend = new Map<string, Map<string, number[]>>();
  for (const task of tasks) {
    for (const attempt of task.attempts) {
      for (const start of attempt.starts ?? []) {
        let phases = byBackend.get(start.backend);
        if (!phases) byBackend.set(start.backend, (phases = new Map()));
        for (const { phase, ms } of startPhases(start.timings)) {
          let list = phases.get(phase);
          if (!list) phases.set(phase, (list = []));
          list.push(ms);
        }
      }
    }
  }
  if (byBackend.size === 0) return undefined;
  const stats: Record<string, StartPhaseStats> = {};
  for (const [backend, phases] of [...byBackend].sort(([a], [b]) => a.localeCompare(b))) {
    const row: StartPhaseStats = {};
    for (const mark of START_MARKS) {
      const durations = phases.get(mark);
      if (durations && mark !== 'requested') row[mark] = phaseStats(durations);
    }
    stats[backend] = row;
  }
  return stats;
}
