import Docker from 'dockerode';

interface BridgeNetwork {
  IPAM?: { Config?: Array<{ Gateway?: string; Subnet?: string }> };
}

/**
 * The engine's default bridge's gateway: this machine's own address there, which a public
 * container reaches. An engine whose default bridge was made on its first start may report no
 * Gateway in IPAM (seen with Docker 20.10 on a new machine); the default bridge's gateway is then
 * its subnet's first address, which is what the engine gives docker0.
 */
export async function bridgeGateway(docker: Docker = new Docker()): Promise<string> {
  const bridge = (await docker.getNetwork('bridge').inspect()) as BridgeNetwork;
  const config = bridge.IPAM?.Config ?? [];
  const gateway = config.find((c) => c.Gateway)?.Gateway;
  if (gateway) return gateway;
  const subnet = config.find((c) => c.Subnet && /^\d+\.\d+\.\d+\.\d+\/\d+$/.test(c.Subnet))?.Subnet;
  if (!subnet) throw new Error("the engine's bridge network has neither a gateway address nor an IPv4 subnet");
  const octets = subnet.split('/')[0]!.split('.').map(Number);
  octets[3] = octets[3]! + 1;
  return octets.join('.');
}

/**
 * Another of this machine's own IPv4 addresses, not the default bridge's gateway: a public
 * container reaches it through the gateway (the packets stay on this machine), so the allowlist
 * cases have two addresses, one allowed and one not.
 */
export async function secondHostAddress(docker: Docker = new Docker()): Promise<string> {
  const gateway = await bridgeGateway(docker);
  const { networkInterfaces } = await import('node:os');
  for (const addresses of Object.values(networkInterfaces()))
    for (const a of addresses ?? []) if (a.family === 'IPv4' && !a.internal && a.address !== gateway) return a.address;
  throw new Error("this machine has no IPv4 address besides the bridge's gateway and loopback");
}
