import { networkInterfaces } from 'node:os';
import type Docker from 'dockerode';
import { CapabilityError } from '@berth/core';
import { EgressProxy } from '@berth/core/backend-kit';
import { publicNetworkName } from './bridge-limits.js';
import { localEngine } from './egress-image.js';
import { BACKEND } from './identity.js';
import type { DockerBackendOptions } from './options.js';

interface BridgeNetwork {
  Id?: string;
  Options?: Record<string, string>;
  IPAM?: { Config?: { Gateway?: string; Subnet?: string }[] };
}

const IPV4 = /^\d+\.\d+\.\d+\.\d+$/;

/**
 * This machine's address on a bridge network: its IPAM gateway, else the address of its bridge
 * interface here (docker0, br-<id>), else its subnet's first address (what the engine gives the
 * bridge). Docker 20.10 reports no Gateway for a default bridge made on the engine's first start.
 */
function bridgeGateway(network: BridgeNetwork): string | undefined {
  const config = network.IPAM?.Config ?? [];
  const given = config.map((c) => c.Gateway).find((g) => g && IPV4.test(g));
  if (given) return given;
  const device = network.Options?.['com.docker.network.bridge.name'] ?? (network.Id ? `br-${network.Id.slice(0, 12)}` : undefined);
  const own = device ? networkInterfaces()[device]?.find((a) => a.family === 'IPv4')?.address : undefined;
  if (own) return own;
  const subnet = config.map((c) => c.Subnet).find((s) => s && /^\d+\.\d+\.\d+\.\d+\/\d+$/.test(s));
  if (!subnet) return undefined;
  const octets = subnet.split('/')[0]!.split('.').map(Number);
  octets[3] = octets[3]! + 1;
  return octets.join('.');
}

/**
 * berth's egress proxy for one backend instance's allowlists with names or wildcards (see
 * egress-rules.ts): listening on the gateway of the bridge sandboxes join (options.publicNetwork,
 * else the engine's default), which is this machine's address on that bridge when the engine is
 * this machine's. Made on first use and shared by every sandbox; it does not keep the process
 * alive. An engine elsewhere (Docker Desktop's VM, a remote DOCKER_HOST) cannot reach it: names
 * there are a CapabilityError saying to list addresses or ranges.
 */
export class BridgeProxy {
  readonly #docker: () => Docker;
  readonly #options: DockerBackendOptions;
  #pending: Promise<EgressProxy> | undefined;

  constructor(docker: () => Docker, options: DockerBackendOptions) {
    this.#docker = docker;
    this.#options = options;
  }

  get(environmentId: string): Promise<EgressProxy> {
    this.#pending ??= this.#make(environmentId).catch((error: unknown) => {
      this.#pending = undefined;
      throw error;
    });
    return this.#pending;
  }

  async #make(environmentId: string): Promise<EgressProxy> {
    const docker = this.#docker();
    const refuse = (why: string, cause?: unknown) =>
      new CapabilityError({
        operation: 'network',
        backend: BACKEND,
        environmentId,
        capability: 'network.allowlist.names',
        message: `the allowlist's names and wildcards are matched by berth's egress proxy, which runs in this process and listens on the bridge's gateway, and ${why}: list addresses or ranges instead (spec.network.allow)`,
        ...(cause ? { cause } : {}),
      });
    if (!(await localEngine(docker))) throw refuse('the Docker engine is not on this machine (so its bridge is not either)');
    const name = publicNetworkName(this.#options.publicNetwork);
    const gateway = bridgeGateway((await docker.getNetwork(name).inspect()) as BridgeNetwork);
    if (!gateway) throw refuse(`the network ${name} has no IPv4 gateway`);
    try {
      return await EgressProxy.listen(gateway);
    } catch (error) {
      throw refuse(`it could not listen on ${gateway} (${(error as Error).message})`, error);
    }
  }
}
