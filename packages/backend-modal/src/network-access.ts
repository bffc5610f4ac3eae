import type { EnvironmentSpec, NetworkMode } from '@berth/core';
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

/** The policy TaskSetNetworkAccess is sent to switch a running sandbox to `mode`. */
export function switchedAccess(mode: NetworkMode): NetworkAccess {
  return mode === 'none' ? EMPTY : ALLOW_ALL;
}

/** The network fields of the sandbox's definition in SandboxCreate. */
export function createdNetwork(spec: Pick<EnvironmentSpec, 'network' | 'networkSwitch'>): { block_network: boolean; network_access: NetworkAccess } {
  if (spec.networkSwitch) return { block_network: false, network_access: switchedAccess(spec.network) };
  const none = spec.network === 'none';
  return { block_network: none, network_access: { network_access_type: none ? 'BLOCKED' : 'OPEN' } };
}
