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
    mounted: boolean;
    docker_compose: boolean;
  };
  resources: { cpu_limit: boolean; memory_limit: boolean; fractional_cpus: boolean };
}

export function harborPluginCapabilities(capabilities: Capabilities): HarborPluginCapabilities {
  return {
    environment: {
      gpus: capabilities.gpus,
      disable_internet: capabilities.networkModes.includes('none'),
      dynamic_network_policy: capabilities.networkSwitch,
      // Not yet: egress allowlists are their own issue.
      network_allowlist: false,
      // harbor's /logs binds and compose files are not berth's model: logs are copied, one container.
      mounted: false,
      docker_compose: false,
    },
    resources: { cpu_limit: capabilities.resourceLimits.cpus, memory_limit: capabilities.resourceLimits.memory, fractional_cpus: true },
  };
}
