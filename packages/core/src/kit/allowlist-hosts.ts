import type { AllowedHost } from './allowlist-blocks.js';

/** Ends each line berth writes into a sandbox's /etc/hosts, so the next write replaces only those. */
export const HOSTS_MARK = '# berth-allowlist';

/**
 * Rewrites /etc/hosts in place: the lines it had, less berth's earlier ones, then one per address
 * given as arguments. In place (a truncating redirect, never a rename) because engines bind-mount
 * the file; the old content is read in full before the truncation. The lines are arguments, never
 * spliced into the script.
 */
const script = (mark: string) =>
  [
    'f=$1; shift',
    `kept=$(while IFS= read -r l || [ -n "$l" ]; do case "$l" in *' ${mark}') ;; *) printf '%s\\n' "$l" ;; esac; done < "$f") || exit 1`,
    `{ if [ -n "$kept" ]; then printf '%s\\n' "$kept"; fi; for l in "$@"; do printf '%s ${mark}\\n' "$l"; done; } > "$f"`,
  ].join('\n');

/** Ends each line naming a sandbox's services (spec.services) in its /etc/hosts: its own mark, so an allowlist's writes keep them. */
export const SERVICES_HOSTS_MARK = '# berth-services';

/**
 * For backends that cut a sandbox's resolvers off under an allowlist: the command (run as a user
 * who may write /etc/hosts) that makes the allowlist's names, and no others, resolve inside, to the
 * addresses berth resolved. No hosts: berth's lines removed (a switch to 'public'). `file` is for tests.
 */
export function hostsFileCommand(hosts: readonly AllowedHost[], file = '/etc/hosts', mark = HOSTS_MARK): string[] {
  const lines = hosts.flatMap((h) => h.addresses.map((address) => `${address} ${h.name}`));
  return ['/bin/sh', '-c', script(mark), 'berth-allowlist-hosts', file, ...lines];
}
