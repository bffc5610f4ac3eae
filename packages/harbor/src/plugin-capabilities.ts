import type { Capabilities } from '@berth/core';

/**
 * What harbor's environment plugin (python/harbor-berth) may claim for a berth backend, in
 * harbor 0.25's names: its `EnvironmentCapabilities` and `EnvironmentResourceCapabilities`.
 * harbor reads them while it constructs the environment, before the plugin can ask berth, so the
 * plugin ships them as a file this writes (scripts/capability-table.mjs; a test keeps it current).
 */
export interface HarborPluginCapabilities {
  environment: {
    gpus: boolean;
    disable_internet: boolean;
    dynamic_network_policy: boolean;
    network_allowlist: boolean;
    network_allowlist_hostnames: boolean;
    network_allowlist_wildcard_hostnames: boolean;
    network_allowlist_ipv4_addresses: boolean;
    network_allowlist_ipv6_addresses: boolean;
    network_allowlist_ipv4_cidrs: boolean;
    network_allowlist_ipv6_cidrs: boolean;
    mounted: boolean;
    docker_compose: boolean;
  };
  resources: { cpu_limit: boolean; memory_limit: boolean; fractional_cpus: boolean };
}

export function harborPluginCapabilities(capabilities: Capabilities): HarborPluginCapabilities {
  const allowlist = capabilities.networkAllowlist;
  return {
    environment: {
      gpus: capabilities.gpus,
      disable_internet: capabilities.networkModes.includes('none'),
      dynamic_network_policy: capabilities.networkSwitch,
      // Per entry kind, as the backend enforces them (harbor refuses a task naming a kind not claimed); no IPv6.
      network_allowlist: allowlist !== false,
      network_allowlist_hostnames: allowlist !== false && allowlist.names !== false,
      network_allowlist_wildcard_hostnames: allowlist !== false && allowlist.wildcards,
      network_allowlist_ipv4_addresses: allowlist !== false,
      network_allowlist_ipv6_addresses: false,
      network_allowlist_ipv4_cidrs: allowlist !== false,
      network_allowlist_ipv6_cidrs: false,
      // harbor's /logs binds are not berth's model: logs are copied. Compose files: where services run.
      mounted: false,
      docker_compose: capabilities.services,
    },
    resources: { cpu_limit: capabilities.resourceLimits.cpus, memory_limit: capabilities.resourceLimits.memory, fractional_cpus: true },
  };
}
