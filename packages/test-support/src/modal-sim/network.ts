// Modal's outbound network policies (modal.client.NetworkAccess) on a sandbox's container. OPEN is
// the engine's bridge; BLOCKED (or the deprecated block_network) no network at all, for good (Modal
// gives a blocked task no interface); ALLOWLIST the bridge, attached while the allowlist lets every
// address out (0.0.0.0/0) and detached while it is empty, leaving only loopback. TaskSetNetworkAccess
// replaces a running task's policy with an allowlist, as Modal's router does. Allowlists naming some
// CIDRs or domains are not enforced here: the simulator refuses them rather than pretend.
import { isIPv4 } from 'node:net';
import type Docker from 'dockerode';
import type { Msg } from './codec.js';
import { Code, RpcError } from './grpc-server.js';
import { engineMessage } from './util.js';

const BRIDGE = 'bridge';
const ALL_V4 = '0.0.0.0/0';

/** A sandbox's network as the simulator keeps it. */
export interface SandboxNetwork {
  /** Made BLOCKED: no interface, none to come. */
  blocked: boolean;
  /** On the bridge now (open, or an allowlist letting everything out). */
  attached: boolean;
  /** The policy now, as last asked for. */
  access: Msg;
  /** Switches of one sandbox, one at a time. */
  queue: Promise<unknown>;
}

function cidrOk(cidr: string): boolean {
  const [ip, bits, extra] = cidr.split('/');
  if (extra !== undefined || ip === undefined || bits === undefined || !/^\d{1,3}$/.test(bits)) return false;
  return isIPv4(ip) ? Number(bits) <= 32 : ip.includes(':') && Number(bits) <= 128;
}

/** An allowlist as Modal would check it; whether it lets everything out (true) or nothing (false). */
function allowlist(access: Msg, field: string): boolean {
  const cidrs = (access.allowed_cidrs ?? []) as string[];
  const domains = (access.allowed_domains ?? []) as string[];
  for (const c of cidrs) if (!cidrOk(c)) throw new RpcError(Code.INVALID_ARGUMENT, `${field}.allowed_cidrs: ${JSON.stringify(c)} is not a CIDR`);
  for (const d of domains) if (!d) throw new RpcError(Code.INVALID_ARGUMENT, `${field}.allowed_domains: an empty domain name`);
  if (cidrs.includes(ALL_V4)) return true;
  if (cidrs.length === 0 && domains.length === 0) return false;
  throw new RpcError(
    Code.UNIMPLEMENTED,
    `the simulator enforces an empty allowlist or one allowing ${ALL_V4}, not ${JSON.stringify({ cidrs, domains })} (Modal filters by CIDR and domain)`,
  );
}

/** What SandboxCreate's definition asks for, refused where Modal's SDKs would not send it. */
export function createdNetwork(def: Msg): SandboxNetwork {
  const access = (def.network_access ?? {}) as Msg;
  const type = access.network_access_type ?? 'UNSPECIFIED';
  const entries = ((access.allowed_cidrs ?? []) as string[]).length + ((access.allowed_domains ?? []) as string[]).length;
  if (def.block_network && (type === 'ALLOWLIST' || type === 'OPEN' || entries > 0))
    throw new RpcError(Code.INVALID_ARGUMENT, `block_network cannot be combined with ${type} network access or allowlist entries`);
  const base = { queue: Promise.resolve(), access };
  if (type === 'ALLOWLIST') return { ...base, blocked: false, attached: allowlist(access, 'network_access') };
  if (type === 'OPEN' && !def.block_network) return { ...base, blocked: false, attached: true };
  // BLOCKED, the deprecated block_network, or nothing said (as before: no network).
  return { ...base, blocked: true, attached: false };
}

/** The engine's network mode for the container made for this sandbox (detached ones start on the bridge and leave it). */
export function networkMode(network: SandboxNetwork): string {
  return network.blocked ? 'none' : BRIDGE;
}

/** Puts the container where `network` says, before its task is handed out. */
export async function settleNetwork(docker: Docker, container: Docker.Container, network: SandboxNetwork): Promise<void> {
  if (!network.blocked && !network.attached) await docker.getNetwork(BRIDGE).disconnect({ Container: container.id, Force: true });
}

/**
 * TaskSetNetworkAccess: validated as Modal's router does (an allowlist only: "open access is
 * expressed as an allow-all allowlist"), then the bridge attached or detached; it answers once the
 * container's network is the new one.
 */
export function setNetworkAccess(docker: Docker, container: Docker.Container, network: SandboxNetwork, req: Msg): Promise<void> {
  const access = req.network_access as Msg | undefined;
  if (!access) throw new RpcError(Code.INVALID_ARGUMENT, 'network_access is required');
  if (access.network_access_type !== 'ALLOWLIST')
    throw new RpcError(
      Code.INVALID_ARGUMENT,
      `only ALLOWLIST network access can be set on a running task (got ${String(access.network_access_type ?? 'UNSPECIFIED')}): express open access as an allow-all allowlist`,
    );
  if (network.blocked) throw new RpcError(Code.FAILED_PRECONDITION, 'the task was created with its network blocked: it has no network to change');
  const attach = allowlist(access, 'network_access');
  const next = network.queue.then(async () => {
    if (attach === network.attached) return;
    try {
      const bridge = docker.getNetwork(BRIDGE);
      if (attach) await bridge.connect({ Container: container.id });
      else await bridge.disconnect({ Container: container.id, Force: true });
    } catch (error) {
      throw new RpcError(Code.INTERNAL, `could not change the task's network: ${engineMessage(error)}`);
    }
    network.attached = attach;
  });
  network.queue = next.catch(() => undefined);
  return next.then(() => {
    network.access = access;
  });
}
