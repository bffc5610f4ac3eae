// An allowlist's domains, enforced as Modal documents them: on the TLS server name of connections to
// port 443. test/egress/sni-gate runs in a container of its own (from the egress image) that shares
// the sandbox's network namespace and alone holds NET_ADMIN there; the sandbox's packet filter
// redirects its port-443 connections to the gate, which lets through those naming an allowed domain
// and resets the rest. One gate per allowlist: a switch starts the next before the last one goes.
import type Docker from 'dockerode';
import { EGRESS_IMAGE, GATE_MARK } from './egress-filter.js';
import { Code, RpcError } from './grpc-server.js';
import { engineMessage } from './util.js';

const READY_MS = 10_000;

/** A running gate: its container and the loopback port the filter redirects to. */
export interface SniGate {
  container: Docker.Container;
  port: number;
}

async function listeningPort(container: Docker.Container): Promise<number> {
  const until = Date.now() + READY_MS;
  for (;;) {
    // Tty: the log is the gate's output as written, with no stream framing.
    const log = String(await container.logs({ stdout: true, stderr: true }));
    const port = /listening 127\.0\.0\.1:(\d+)/.exec(log)?.[1];
    if (port) return Number(port);
    const { State } = await container.inspect();
    if (!State.Running || Date.now() > until) throw new Error(`sni-gate did not start listening: ${log.trim() || State.Status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Starts a gate letting `domains` through in the namespace of the container `containerId`. */
export async function startGate(docker: Docker, containerId: string, domains: readonly string[], labels: Record<string, string>): Promise<SniGate> {
  let container: Docker.Container | undefined;
  try {
    container = await docker.createContainer({
      Image: EGRESS_IMAGE,
      Entrypoint: ['/usr/sbin/sni-gate', '-listen', '127.0.0.1:0', '-mark', String(GATE_MARK), '-allow', domains.join(',')],
      Cmd: [],
      Tty: true,
      Labels: labels,
      HostConfig: { NetworkMode: `container:${containerId}`, CapAdd: ['NET_ADMIN'] },
    });
    await container.start();
    return { container, port: await listeningPort(container) };
  } catch (error) {
    await container?.remove({ force: true }).catch(() => undefined);
    throw new RpcError(Code.INTERNAL, `the simulator could not start the allowlist's TLS gate: ${engineMessage(error)}`);
  }
}

/** Removes a gate (its connections end with it). */
export async function stopGate(gate: SniGate | undefined): Promise<void> {
  await gate?.container.remove({ force: true }).catch(() => undefined);
}
