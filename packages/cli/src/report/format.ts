// How numbers from report.json are written, in the terminal summary and in report.html alike, so
// the two never disagree about the same run.

/** Coverage and mean reward: three decimals, always (0.950 reads as a ratio, 0.95 as a guess). */
export function formatRatio(value: number): string {
  return value.toFixed(3);
}

/** A reward as the verifier wrote it: integers plain, anything else with three decimals. */
export function formatReward(value: number): string {
  return Number.isInteger(value) ? String(value) : value.toFixed(3);
}

/** An ISO timestamp as 'YYYY-MM-DD HH:MM:SS UTC' (UTC, so a report reads the same everywhere). */
export function formatTimestamp(iso: string): string {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return iso;
  return new Date(ms)
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, ' UTC');
}

/** Category keys as words: 'permanent_infra' -> 'permanent infra'. */
export function humanize(key: string): string {
  return key.replace(/_/g, ' ');
}

/**
 * Text from the job (task ids, error types, messages) made safe for a terminal: control characters,
 * an escape sequence among them, are shown as \u{..} instead of acting on the screen.
 */
export function printable(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\u{${c.charCodeAt(0).toString(16)}}`);
}
