import type { NetworkAllowlist, NetworkNotice } from '@berth/core';
import { SandboxAllowlist, type ResolvedAllowlist } from '@berth/core/backend-kit';
import type { Cluster } from './cluster.js';
import { IDENTITY } from './identity.js';
import { deleteEgressPolicy } from './egress-policy.js';
import { spawnExec } from './exec-socket.js';
import type { K8sBackendOptions } from './options.js';
import type { PodNetwork } from './pod-network.js';

/** Writing the hosts lines gets this long before it counts as failed. */
const HOSTS_LIMIT_MS = 30_000;

/**
 * One pod's allowlist on Kubernetes (see egress-policy.ts): its own policy made or replaced
 * (PodNetwork.allow) and deleted at removal; the rest (names in /etc/hosts, their refresh) is the
 * kit's SandboxAllowlist, over an exec as the pod's user.
 */
export class PodAllowlist {
  readonly #cluster: Cluster;
  readonly #network: PodNetwork;
  readonly #pod: string;
  readonly #names: SandboxAllowlist;
  /** Whether the pod's own policy was made (deleted at removal). */
  #policy = false;

  constructor(cluster: Cluster, network: PodNetwork, options: K8sBackendOptions, pod: string) {
    this.#cluster = cluster;
    this.#network = network;
    this.#pod = pod;
    this.#names = new SandboxAllowlist(
      {
        ...IDENTITY,
        engine: 'Kubernetes',
        environmentId: pod,
        owner: "the pod's",
        hostsNeed: '/bin/sh in the image and a pod user who may write /etc/hosts (root)',
        run: (argv) => this.#run(argv),
      },
      options,
    );
  }

  /** The allowlist's blocks and names, its names resolved now (before a pod is made for it, so a name that does not resolve costs no pod). */
  resolve(allowlist: NetworkAllowlist): Promise<ResolvedAllowlist> {
    return this.#names.resolve(allowlist);
  }

  /** At create: where the pod's network notices go. */
  bind(notify: (notice: NetworkNotice) => void): void {
    this.#names.bind(notify);
  }

  /** The running pod (`uid`) put under `allowlist`: its policy, then its hosts lines; returns once both hold, its names' refresh started. */
  apply(uid: string, allowlist: NetworkAllowlist, resolved: ResolvedAllowlist, signal?: AbortSignal): Promise<void> {
    this.#policy = true;
    return this.#names.apply(allowlist, resolved, (blocks, abort) => this.#network.allow(this.#pod, uid, allowlist, blocks, this.#pod, abort), { signal });
  }

  /** Back to 'public': berth's hosts lines removed, so names resolve through the pod's resolvers again. */
  open(): Promise<void> {
    return this.#names.open();
  }

  /** No more refreshes (a switch, the pod's removal); waits for one in flight. */
  stop(): Promise<void> {
    return this.#names.stop();
  }

  /** The pod's policy deleted, if one was made (the cluster's garbage collector would, later: this is the prompt way). */
  async remove(): Promise<void> {
    await this.stop();
    if (this.#policy) await deleteEgressPolicy(this.#cluster, this.#pod);
  }

  /** A command run in the pod (as its user: an exec has no other): its exit code (null: the connection was cut) and output. */
  async #run(argv: readonly string[]): Promise<{ code: number | null; output: string }> {
    const proc = await spawnExec(this.#cluster, this.#pod, { argv: [...argv], env: {}, stdin: false });
    const output: Buffer[] = [];
    proc.stdout.on('data', (chunk: Buffer) => output.push(chunk));
    proc.stderr.on('data', (chunk: Buffer) => output.push(chunk));
    const timer = setTimeout(() => proc.abandon(), HOSTS_LIMIT_MS);
    const { code } = await proc.exit.finally(() => clearTimeout(timer));
    return { code, output: Buffer.concat(output).toString('utf8') };
  }
}
