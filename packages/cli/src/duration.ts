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

/** 3723000 -> '1h02m', 65000 -> '1m05s', 4200 -> '4.2s'. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '-';
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)}s`;
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}
