import { allowEntries, isAllowlist, type AllowlistEnforcement, type EnvironmentSpec, type NetworkAllowlist, type NetworkMode } from '@berth/core';
import type { NetworkAccess } from './wire/index.js';

// berth's networks as Modal's outbound policies (modal.client.NetworkAccess).
//
// A sandbox that keeps its network gets Modal's plainest forms: 'none' is BLOCKED (Modal gives it no
// network at all: "BlockNetwork disables all networking", in Modal's Go SDK), 'public' is OPEN.
//
// A sandbox made to switch (spec.networkSwitch) is made with an ALLOWLIST policy instead, because
// that is the one Modal replaces on a running task: the router's TaskSetNetworkAccess "only
// supports ALLOWLIST; open access is expressed as an allow-all allowlist" (task_command_router.proto;
// Python's SDK still sends OPEN and its own test says "server may reject this currently"), and a
// BLOCKED task has no interface to open again. 'none' is then an empty allowlist (the SDKs: "an
// empty Entries blocks all egress"), 'public' the allow-all one Modal's own example widens to
// (cidrs 0.0.0.0/0, domains "*").

const EMPTY: NetworkAccess = { network_access_type: 'ALLOWLIST', allowed_cidrs: [], allowed_domains: [] };
const ALLOW_ALL: NetworkAccess = { network_access_type: 'ALLOWLIST', allowed_cidrs: ['0.0.0.0/0'], allowed_domains: ['*'] };

/**
 * How Modal enforces `network: { allow }` (an ALLOWLIST policy, as its SDKs' outbound allowlists):
 * addresses and ranges as CIDRs, "any protocol"; hostnames and `*.` wildcards as domains, matched
 * on the TLS server name of connections to port 443 only; DNS resolves; a policy replaced on a
 * running task ends the connections it no longer permits (Modal's SDK says so).
 */
export const ALLOWLIST_ENFORCEMENT: AllowlistEnforcement = { addresses: 'packet', names: 'tls-sni', wildcards: true, dns: 'open', connections: 'ended' };

/** berth's allowlist as Modal's: addresses and ranges to allowed_cidrs (an address as a /32), names and wildcards to allowed_domains. */
export function allowlistAccess(allowlist: NetworkAllowlist): NetworkAccess {
  const cidrs: string[] = [];
  const domains: string[] = [];
  for (const entry of allowEntries(allowlist)) {
    if (entry.kind === 'range') cidrs.push(entry.cidr);
    else if (entry.kind === 'address') cidrs.push(`${entry.address}/32`);
    else if (entry.kind === 'host') domains.push(entry.host);
    else domains.push(`*.${entry.suffix}`);
  }
  return { network_access_type: 'ALLOWLIST', allowed_cidrs: cidrs, allowed_domains: domains };
}

/** The policy TaskSetNetworkAccess is sent to switch a running sandbox to `mode`. */
export function switchedAccess(mode: NetworkMode): NetworkAccess {
  if (isAllowlist(mode)) return allowlistAccess(mode);
  return mode === 'none' ? EMPTY : ALLOW_ALL;
}

/** The network fields of the sandbox's definition in SandboxCreate. */
export function createdNetwork(
  spec: Pick<EnvironmentSpec, 'network' | 'networkSwitch'>,
  i6pn = false,
): { block_network: boolean; network_access: NetworkAccess } {
  // With i6pn (services) too: blocking "disables all networking, including i6pn"; an empty allowlist keeps it.
  if (spec.networkSwitch || isAllowlist(spec.network) || i6pn) return { block_network: false, network_access: switchedAccess(spec.network) };
  const none = spec.network === 'none';
  return { block_network: none, network_access: { network_access_type: none ? 'BLOCKED' : 'OPEN' } };
}
