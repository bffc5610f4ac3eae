// What berth's egress proxy pod and the backend agree on: where admissions are, the ports.

/** The proxy pod's directory of admissions: one file per sandbox, named by its pod's address. */
export const ADMISSIONS_DIR = '/tmp/berth-egress';

/** Sandboxes reach the proxy by the address its DNS answers give: on the ports they aim at. */
export const PROXY_PORTS = { tls: 443, http: 80, dns: 53 } as const;

export function admissionFile(dir: string, source: string): string {
  return `${dir}/${source}.json`;
}

/**
 * Run in the proxy pod with `node -e` (its image has node, maybe nothing else): argv the
 * directory, the sandbox's address, and its allowlist as JSON, or '' to withdraw it. Written
 * beside and renamed, so the proxy never reads half a file.
 */
export const ADMIT_SCRIPT = [
  "const fs = require('fs');",
  'const [dir, source, allow] = process.argv.slice(1);',
  'fs.mkdirSync(dir, { recursive: true });',
  "const file = dir + '/' + source + '.json';",
  "if (allow === '') fs.rmSync(file, { force: true });",
  "else { fs.writeFileSync(file + '.new', allow); fs.renameSync(file + '.new', file); }",
].join(' ');
