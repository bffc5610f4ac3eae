import Docker from 'dockerode';

/** The engine's default bridge's gateway: this machine's own address there, which a public container reaches. */
export async function bridgeGateway(docker: Docker = new Docker()): Promise<string> {
  const bridge = (await docker.getNetwork('bridge').inspect()) as { IPAM?: { Config?: Array<{ Gateway?: string }> } };
  const gateway = bridge.IPAM?.Config?.find((c) => c.Gateway)?.Gateway;
  if (!gateway) throw new Error("the engine's bridge network has no gateway address");
  return gateway;
}
