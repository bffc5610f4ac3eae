import { UsageError } from './usage-error.js';

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * '90s', '30m', '2h', '1h30m', '1d' (or a bare number of seconds) in milliseconds. `what` names
 * the option in the error, which says what a valid value looks like.
 */
export function parseDuration(text: string, what: string): number {
  const trimmed = text.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Number(trimmed) * 1000;
  const parts = [...trimmed.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)];
  const covered = parts.map((p) => p[0]).join('');
  if (parts.length === 0 || covered !== trimmed) {
    throw new UsageError(`${what}: "${text}" is not a duration; write it like 90s, 30m, 2h or 1h30m`);
  }
  const ms = parts.reduce((sum, p) => sum + Number(p[1]) * UNITS[p[2]!]!, 0);
  if (!(ms > 0)) throw new UsageError(`${what}: the duration must be more than zero, got "${text}"`);
  return ms;
}

/** A duration for a person: 850 ms, 4.2 s, 3 min 05 s, 1 h 02 min. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '?';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const seconds = ms / 1000;
  if (seconds < 60) return `${seconds < 10 ? seconds.toFixed(1) : Math.round(seconds)} s`;
  const totalSeconds = Math.round(seconds);
  const minutes = Math.floor(totalSeconds / 60);
  if (minutes < 60) return `${minutes} min ${String(totalSeconds % 60).padStart(2, '0')} s`;
  return `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, '0')} min`;
}
