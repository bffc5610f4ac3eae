// Secrets must never reach logs, errors, events or reports. Errors are built so that they do not
// carry secrets in the first place; this module is the second line: every string that leaves the
// library through toJSON() or a report passes through redactSecrets().

const REDACTED = '[REDACTED]';
const known = new Set<string>();

/** Remember a secret value (a password, token, base64 auth blob) so it is masked wherever it appears. */
export function registerSecret(value: string | undefined | null): void {
  // Very short values would mask ordinary words; credentials are never that short.
  if (typeof value === 'string' && value.length >= 6) known.add(value);
}

const PATTERNS: Array<[RegExp, string]> = [
  // URL user info: https://user:password@host
  [/([a-z][a-z0-9+.-]*:\/\/[^/\s:@]+:)[^@\s/]+@/gi, `$1${REDACTED}@`],
  // HTTP authorization headers and the like
  [/\b(authorization|proxy-authorization|x-registry-auth)(["']?\s*[:=]\s*["']?)(basic|bearer)?\s*[A-Za-z0-9+/=._~-]+/gi, `$1$2$3 ${REDACTED}`],
  // key=value or "key": "value" for secret-looking keys
  [
    /\b(password|passwd|secret|token|identitytoken|identityToken|auth|registrytoken|secretAccessKey|sessionToken)(["']?\s*[:=]\s*["']?)([^"'\s,}&]+)/g,
    `$1$2${REDACTED}`,
  ],
];

export function redactSecrets(text: string): string {
  let out = text;
  for (const secret of known) {
    if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  }
  for (const [re, replacement] of PATTERNS) out = out.replace(re, replacement);
  return out;
}
