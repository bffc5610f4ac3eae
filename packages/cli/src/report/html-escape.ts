// Everything from the job directory (task ids, error types and messages, paths) is untrusted text:
// it reaches the page only through these functions.

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text for element content and for quoted attribute values alike. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c] ?? c);
}

/**
 * JSON to sit inside <script type="application/json">: '<' (so no '</script>' or '<!--' can end or
 * bend the element), '>' and '&' become \u escapes, which JSON.parse reads back as the same text.
 * U+2028/2029 are escaped too, in case someone pastes the data into a JS string.
 */
export function jsonForScript(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

/**
 * A number from report.json, marked with the path it came from so a test (or a scraper) can check
 * the page against the file: `data-metric="infraFailed.permanent"`.
 */
export function metric(name: string, text: string, className?: string): string {
  const cls = className ? ` class="${escapeHtml(className)}"` : '';
  return `<span${cls} data-metric="${escapeHtml(name)}">${escapeHtml(text)}</span>`;
}

/** Attributes from a record, escaped; undefined values are left out. */
export function attrs(values: Record<string, string | number | boolean | undefined>): string {
  return Object.entries(values)
    .filter((entry): entry is [string, string | number | boolean] => entry[1] !== undefined)
    .map(([name, value]) => ` ${name}="${escapeHtml(String(value))}"`)
    .join('');
}
