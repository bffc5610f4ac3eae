// Modal's outbound network policies (modal.client.NetworkAccess) on a sandbox's container. OPEN is
// the engine's bridge; BLOCKED (or the deprecated block_network) no network at all, for good (Modal
// gives a blocked task no interface); ALLOWLIST the bridge, attached while the allowlist lets every
// address out (0.0.0.0/0) and detached while it is empty, leaving only loopback. Other allowlists
// are enforced as Modal documents them: CIDRs "any protocol" by the container's own packet filter
// (egress-filter.ts), domains on the TLS server name of connections to port 443 by a gate in the
// container's namespace (sni-gate.ts); DNS still resolves. IPv6 CIDRs are refused (the engine's
// bridge here has no IPv6 to filter). TaskSetNetworkAccess replaces a running task's policy with an
// allowlist, as Modal's router does.
import { isIPv4 } from 'node:net';
import type Docker from 'dockerode';
import type { Msg } from './codec.js';
import { Code, RpcError } from './grpc-server.js';
import { writeFilter } from './egress-filter.js';
import { type SniGate, startGate, stopGate } from './sni-gate.js';
import { engineMessage } from './util.js';

const BRIDGE = 'bridge';
const ALL_V4 = '0.0.0.0/0';

/** A sandbox's network as the simulator keeps it. */
export interface SandboxNetwork {
  /** Made BLOCKED: no interface, none to come. */
  blocked: boolean;
  /** On the bridge now (open, or an allowlist letting something out). */
  attached: boolean;
  /** What its packet filter lets out, while an allowlist short of allow-all holds (undefined: no filter). */
  filter: Allowed | undefined;
  /** The TLS gate, while the allowlist lists domains. */
  gate: SniGate | undefined;
  /** The policy now, as last asked for. */
  access: Msg;
  /** Switches of one sandbox, one at a time. */
  queue: Promise<unknown>;
  /** i6pn_enabled: on the simulator's i6pn network (i6pn.ts), whatever its outbound policy. */
  i6pn: boolean;
}

/** An allowlist short of allow-all: its CIDRs (IPv4) and domains. */
interface Allowed {
  cidrs: string[];
  domains: string[];
}

// A name, a *. wildcard over one, or * (every server name).
const DOMAIN = /^(\*|(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*)$/i;

function cidrOk(cidr: string): boolean {
  const [ip, bits, extra] = cidr.split('/');
  if (extra !== undefined || ip === undefined || bits === undefined || !/^\d{1,3}$/.test(bits)) return false;
  return isIPv4(ip) ? Number(bits) <= 32 : ip.includes(':') && Number(bits) <= 128;
}

/** An allowlist as Modal would check it: on the bridge or not, and what a filter lets out (undefined: everything). */
function allowlist(access: Msg, field: string): { attach: boolean; filter: Allowed | undefined } {
  const cidrs = (access.allowed_cidrs ?? []) as string[];
  const domains = (access.allowed_domains ?? []) as string[];
  for (const c of cidrs) if (!cidrOk(c)) throw new RpcError(Code.INVALID_ARGUMENT, `${field}.allowed_cidrs: ${JSON.stringify(c)} is not a CIDR`);
  for (const d of domains)
    if (!DOMAIN.test(d)) throw new RpcError(Code.INVALID_ARGUMENT, `${field}.allowed_domains: ${JSON.stringify(d)} is not a domain name`);
  if (cidrs.includes(ALL_V4)) return { attach: true, filter: undefined };
  if (cidrs.length === 0 && domains.length === 0) return { attach: false, filter: undefined };
  const v6 = cidrs.find((c) => !isIPv4(c.split('/')[0] ?? ''));
  if (v6 !== undefined)
    throw new RpcError(Code.UNIMPLEMENTED, `${field}.allowed_cidrs: the simulator enforces IPv4 CIDRs, not ${JSON.stringify(v6)} (its bridge has no IPv6)`);
  return { attach: true, filter: { cidrs, domains: domains.map((d) => d.toLowerCase()) } };
}

/** The container's filter and gate made what `next` asks for: the next gate up before the filter points at it, the last one gone after. */
async function enforce(docker: Docker, containerId: string, network: SandboxNetwork, next: Allowed | undefined, labels: Record<string, string>): Promise<void> {
  const gate = next && next.domains.length > 0 ? await startGate(docker, containerId, next.domains, labels) : undefined;
  try {
    await writeFilter(docker, containerId, next && { cidrs: next.cidrs, ...(gate ? { gatePort: gate.port } : {}) }, labels);
  } catch (error) {
    await stopGate(gate);
    throw error;
  }
  const last = network.gate;
  network.filter = next;
  network.gate = gate;
  await stopGate(last);
}

/** What SandboxCreate's definition asks for, refused where Modal's SDKs would not send it. */
export function createdNetwork(def: Msg): SandboxNetwork {
  const access = (def.network_access ?? {}) as Msg;
  const type = access.network_access_type ?? 'UNSPECIFIED';
  const entries = ((access.allowed_cidrs ?? []) as string[]).length + ((access.allowed_domains ?? []) as string[]).length;
  if (def.block_network && (type === 'ALLOWLIST' || type === 'OPEN' || entries > 0))
    throw new RpcError(Code.INVALID_ARGUMENT, `block_network cannot be combined with ${type} network access or allowlist entries`);
  const i6pn = def.i6pn_enabled === true;
  // As Modal's SDK says: "block_network disables all networking, including i6pn".
  if (i6pn && (def.block_network || type === 'BLOCKED' || type === 'UNSPECIFIED'))
    throw new RpcError(
      Code.INVALID_ARGUMENT,
      'i6pn_enabled with the network blocked: blocking disables all networking, including i6pn; to keep i6pn while blocking public egress, use an empty outbound allowlist',
    );
  const base = { queue: Promise.resolve(), access, filter: undefined, gate: undefined, i6pn };
  if (type === 'ALLOWLIST') {
    const { attach, filter } = allowlist(access, 'network_access');
    return { ...base, blocked: false, attached: attach, filter };
  }
  if (type === 'OPEN' && !def.block_network) return { ...base, blocked: false, attached: true };
  // BLOCKED, the deprecated block_network, or nothing said (as before: no network).
  return { ...base, blocked: true, attached: false };
}

/** The engine's network mode for the container made for this sandbox (detached ones start on the bridge and leave it). */
export function networkMode(network: SandboxNetwork): string {
  return network.blocked ? 'none' : BRIDGE;
}

/** Before the container starts: off the bridge if it must start so, or until its filter holds. */
export async function prepareNetwork(docker: Docker, container: Docker.Container, network: SandboxNetwork): Promise<void> {
  if (!network.blocked && (!network.attached || network.filter)) await docker.getNetwork(BRIDGE).disconnect({ Container: container.id, Force: true });
}

/** Once it runs, before its task is handed out: its filter written, then back on the bridge. */
export async function settleNetwork(docker: Docker, container: Docker.Container, network: SandboxNetwork, labels: Record<string, string>): Promise<void> {
  const filter = network.filter;
  if (network.blocked || !filter) return;
  // In the queue, so that a removal meanwhile (releaseNetwork) stops the gate this starts.
  const settled = network.queue.then(() => enforce(docker, container.id, network, filter, labels));
  network.queue = settled.catch(() => undefined);
  await settled;
  await docker.getNetwork(BRIDGE).connect({ Container: container.id });
}

/** When the sandbox's container goes: its gate too (after any switch under way). */
export function releaseNetwork(network: SandboxNetwork): Promise<void> {
  const released = network.queue.then(() => {
    const gate = network.gate;
    network.gate = undefined;
    return stopGate(gate);
  });
  network.queue = released;
  return released;
}

/**
 * TaskSetNetworkAccess: validated as Modal's router does (an allowlist only: "open access is
 * expressed as an allow-all allowlist"), then the bridge attached or detached; it answers once the
 * container's network is the new one.
 */
export function setNetworkAccess(
  docker: Docker,
  container: Docker.Container,
  network: SandboxNetwork,
  req: Msg,
  labels: Record<string, string>,
): Promise<void> {
  const access = req.network_access as Msg | undefined;
  if (!access) throw new RpcError(Code.INVALID_ARGUMENT, 'network_access is required');
  if (access.network_access_type !== 'ALLOWLIST')
    throw new RpcError(
      Code.INVALID_ARGUMENT,
      `only ALLOWLIST network access can be set on a running task (got ${String(access.network_access_type ?? 'UNSPECIFIED')}): express open access as an allow-all allowlist`,
    );
  if (network.blocked) throw new RpcError(Code.FAILED_PRECONDITION, 'the task was created with its network blocked: it has no network to change');
  const { attach, filter } = allowlist(access, 'network_access');
  const next = network.queue.then(async () => {
    try {
      // The filter first (written, or emptied once no longer wanted), then the bridge.
      if (filter || network.filter) await enforce(docker, container.id, network, filter, labels);
      if (attach === network.attached) return;
      const bridge = docker.getNetwork(BRIDGE);
      if (attach) await bridge.connect({ Container: container.id });
      else await bridge.disconnect({ Container: container.id, Force: true });
    } catch (error) {
      if (error instanceof RpcError) throw error;
      throw new RpcError(Code.INTERNAL, `could not change the task's network: ${engineMessage(error)}`);
    }
    network.attached = attach;
  });
  network.queue = next.catch(() => undefined);
  return next.then(() => {
    network.access = access;
  });
}
