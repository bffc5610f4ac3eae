import { hintText, type Capabilities } from '@berth/core';
import type { CapabilityHints } from '@berth/core/backend-kit';

// Which conformance cases need which capability, in one place: the suite skips a case the backend
// cannot run with this reason, and the README's generated list of skipped cases reads the same
// table, so the docs and the suite cannot disagree. No vitest here: scripts import it too.

type Requirement = readonly [claimed: (c: Capabilities) => boolean, what: string, hint: keyof CapabilityHints];

const TTY: Requirement = [(c) => c.tty, 'tty', 'tty'];
const USER: Requirement = [(c) => c.execUser, 'execUser', 'execUser'];
const BUILD: Requirement = [(c) => c.imageBuild, 'imageBuild', 'imageBuild'];
const SERVICES: Requirement = [(c) => c.services, 'services', 'services'];
const IMAGE_MOUNTS: Requirement = [(c) => c.mounts.includes('image'), 'image mounts', 'mounts.image'];

/** Case id → the capability it needs. A case not listed here needs none (or says why itself). */
export const CASE_REQUIREMENTS: Readonly<Record<string, Requirement>> = {
  'exec.tty': TTY,
  'exec.tty-size': TTY,
  'exec.tty-stdin': TTY,
  'exec.tty-timeout': TTY,
  'exec.user': USER,
  'exec.user-unknown': USER,
  'capabilities.network-none': [(c) => c.networkModes.includes('none'), "network 'none'", 'network'],
  'capabilities.network-switch': [(c) => c.networkSwitch, 'networkSwitch', 'networkSwitch'],
  'capabilities.network-allowlist': [(c) => c.networkAllowlist !== false, 'networkAllowlist', 'network.allowlist'],
  'capabilities.network-allowlist-dns': [
    (c) => c.networkAllowlist !== false && c.networkAllowlist.dns !== 'open',
    "networkAllowlist with DNS other than 'open'",
    'network.allowlist.dns',
  ],
  'capabilities.network-allowlist-tls': [
    (c) => c.networkAllowlist !== false && (c.networkAllowlist.names === 'tls-sni' || c.networkAllowlist.names === 'proxy'),
    'networkAllowlist with names matched on TLS server names or by a proxy',
    'network.allowlist.names',
  ],
  'capabilities.network-allowlist-switch': [(c) => c.networkAllowlist !== false && c.networkSwitch, 'networkAllowlist and networkSwitch', 'network.allowlist'],
  'mounts.image': IMAGE_MOUNTS,
  'mounts.image-missing-subpath': IMAGE_MOUNTS,
  'image.build': BUILD,
  'image.build-step-fails': BUILD,
  'snapshot.roundtrip': [(c) => c.snapshot, 'snapshot', 'snapshot'],
  'services.reachable': SERVICES,
  'services.order': SERVICES,
  'services.start-failures': SERVICES,
  'services.lost': SERVICES,
  'services.network-none': SERVICES,
  'services.private-image': SERVICES,
  'services.allowlist': SERVICES,
  'services.volume': [(c) => c.services && c.mounts.includes('volume'), 'services and volume mounts', 'mounts.volume'],
};

/** Why a backend with these capabilities cannot run this case (its hint, when it has one), or undefined. */
export function capabilityGap(id: string, capabilities: Capabilities, hints: CapabilityHints = {}): string | undefined {
  const requirement = CASE_REQUIREMENTS[id];
  if (!requirement || requirement[0](capabilities)) return undefined;
  const hint = hintText(hints[requirement[2]]);
  return `the backend does not claim ${requirement[1]}${hint ? ` (${hint})` : ''}`;
}

/** Every case this backend skips for a capability it lacks, with the reason, in case order. */
export function skippedCases(backend: { capabilities: Capabilities; hints?: CapabilityHints }): Array<{ id: string; reason: string }> {
  return Object.keys(CASE_REQUIREMENTS).flatMap((id) => {
    const reason = capabilityGap(id, backend.capabilities, backend.hints);
    return reason === undefined ? [] : [{ id, reason }];
  });
}

/** The README's list of conformance cases each backend skips, with the reason (generated, like the capability table). */
export function skippedCasesTable(backends: ReadonlyArray<{ name: string; capabilities: Capabilities; hints?: CapabilityHints }>): string {
  const rows = backends.flatMap((b) => {
    const skipped = skippedCases(b);
    if (skipped.length === 0) return [`| ${b.name} | (none) | runs every case |`];
    return skipped.map((s) => `| ${b.name} | \`${s.id}\` | ${s.reason.replace(/\|/g, '\\|')} |`);
  });
  return ['| backend | skipped case | why |', '|---|---|---|', ...rows].join('\n');
}

/** The warm-pool cases: they make their own pools on the backend itself, so a run through pools (options.pool) repeats them for nothing. */
/** The services cases: a backend's run with archive transfers and without pools has them (they move no files and claim nothing special). */
export const SERVICE_CASES = Object.keys(CASE_REQUIREMENTS).filter((id) => id.startsWith('services.'));

export const POOL_CASES = ['pool.claim', 'pool.dead-while-idle', 'pool.failed-start', 'pool.close-while-claims-wait', 'pool.lifetime-from-claim'] as const;

/**
 * What a run through warm pools (options.pool) may skip, with the reason: the pool cases (above) and
 * the cases that only move bulk data through a sandbox that is already running, where a claimed
 * sandbox and a fresh one take the same code path after the claim. Keeps a pooled run short in CI.
 */
export const POOLED_SKIP: Readonly<Record<string, string>> = {
  ...Object.fromEntries(POOL_CASES.map((id) => [id, 'a pool case: it runs on the backend itself, in the run without pools'])),
  'transfer.large-file': 'bulk data through a running sandbox: the same path as without pools (the run without pools has it)',
  'transfer.many-files': 'bulk data through a running sandbox: the same path as without pools (the run without pools has it)',
  'exec.output-cap-default': 'bulk output from a running sandbox: the same path as without pools (the run without pools has it)',
  'exec.stdin-stream': 'bulk input to a running sandbox: the same path as without pools (the run without pools has it)',
};
