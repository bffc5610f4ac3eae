import type { Capabilities, ImageAuthKind } from '../contract.js';
import { hintText } from '../errors/remedy.js';
import type { CapabilityHints } from './capabilities.js';

/** A backend as the table sees it: what it claims, and what it says instead where it does not. */
export interface CapabilitySource {
  name: string;
  capabilities: Capabilities;
  hints?: CapabilityHints;
}

type Row = [what: string, claimed: (c: Capabilities) => boolean, hint: keyof CapabilityHints | undefined, how?: (c: Capabilities) => string];

const AUTH: ReadonlyArray<[ImageAuthKind, string]> = [
  ['basic', 'username / password'],
  ['identityToken', 'identity token'],
  ['secretName', 'a named secret'],
  ['dockerConfig', "Docker's config"],
  ['aws', 'AWS (ECR)'],
];

const ROWS: Row[] = [
  ['network `none`', (c) => c.networkModes.includes('none'), 'network'],
  ['network `public`', (c) => c.networkModes.includes('public'), 'network'],
  ['network switching (`setNetwork`, per-phase networks)', (c) => c.networkSwitch, 'networkSwitch'],
  [
    'egress allowlist (`network: { allow }`): addresses and IPv4 ranges',
    (c) => c.networkAllowlist !== false,
    'network.allowlist',
    () => 'every packet, any port',
  ],
  [
    'egress allowlist: hostnames',
    (c) => c.networkAllowlist !== false && c.networkAllowlist.names !== false,
    'network.allowlist.names',
    (c) => NAMES[c.networkAllowlist ? String(c.networkAllowlist.names) : ''] ?? '',
  ],
  ['egress allowlist: `*.domain` wildcards', (c) => c.networkAllowlist !== false && c.networkAllowlist.wildcards, 'network.allowlist.wildcards'],
  [
    'egress allowlist: DNS',
    (c) => c.networkAllowlist !== false,
    'network.allowlist.dns',
    (c) => DNS[c.networkAllowlist ? c.networkAllowlist.dns : 'none'] ?? '',
  ],
  [
    'egress allowlist: a switch ends connections it no longer allows',
    (c) => c.networkAllowlist !== false && c.networkAllowlist.connections === 'ended',
    'network.allowlist.connections',
  ],
  ['exec as another user (`opts.user`)', (c) => c.execUser, 'execUser'],
  ['a terminal for exec (`opts.tty`)', (c) => c.tty, 'tty'],
  ['GPUs (`resources.gpus`)', (c) => c.gpus, 'gpus'],
  ['GPU types (`resources.gpuTypes`, any of)', (c) => c.gpuTypes, 'gpuTypes'],
  ['cpu limit (`resources.cpus`)', (c) => c.resourceLimits.cpus, 'resources.cpus'],
  ['memory limit (`resources.memoryMb`)', (c) => c.resourceLimits.memory, 'resources.memory'],
  ['storage limit (`resources.storageMb`)', (c) => c.resourceLimits.storage, 'resources.storage'],
  ['Dockerfile builds (`image.build`)', (c) => c.imageBuild, 'imageBuild'],
  ['bind mounts', (c) => c.mounts.includes('bind'), 'mounts.bind'],
  ['image mounts (an agent runtime from another image)', (c) => c.mounts.includes('image'), 'mounts.image'],
  ["volumes shared with services (`{ type: 'volume' }`: compose's named volumes)", (c) => c.mounts.includes('volume'), 'mounts.volume'],
  ['snapshots (`env.snapshot()`: an image of the filesystem)', (c) => c.snapshot, 'snapshot'],
  ["services (`spec.services`: a compose file's other containers, reached by name)", (c) => c.services, 'services'],
  ...AUTH.map(([kind, words]): Row => [`registry auth: ${words}`, (c) => c.imageAuth.includes(kind), 'imageAuth']),
];

const NAMES: Record<string, string> = {
  resolved: 'resolved to addresses by berth when applied and every refreshNamesMs (all sharing an address pass)',
  'tls-sni': 'by TLS server name (port 443 only)',
  proxy: 'by an egress proxy (TLS SNI, HTTP Host, CONNECT)',
};
const DNS: Record<string, string> = { open: 'any name resolves', allowed: 'only allowed names resolve', none: 'no resolver' };

const cell = (text: string) => text.replace(/\|/g, '\\|');

/**
 * The README's capability table: one row per capability, one column per backend, and where a
 * backend refuses, what it says instead (its hint). Generated from the backends themselves, so
 * the docs cannot claim what the code does not do.
 */
export function capabilityTable(backends: readonly CapabilitySource[]): string {
  const header = `| capability | ${backends.map((b) => b.name).join(' | ')} |`;
  const rule = `|---|${backends.map(() => '---').join('|')}|`;
  const rows = ROWS.map(([what, claimed, hint, how]) => {
    const yes = (c: Capabilities) => (how?.(c) ? `yes: ${how(c)}` : 'yes');
    const cells = backends.map((b) => (claimed(b.capabilities) ? yes(b.capabilities) : `no${hint && b.hints?.[hint] ? `: ${hintText(b.hints[hint])}` : ''}`));
    return `| ${what} | ${cells.map(cell).join(' | ')} |`;
  });
  return [header, rule, ...rows].join('\n');
}
