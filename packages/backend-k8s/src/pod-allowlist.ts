import { BackendUnavailableError, ConfigError, type NetworkAllowlist, type NetworkNotice } from '@berth/core';
import {
  AllowlistRefresh,
  hostsFileCommand,
  refreshNamesMs,
  resolveAllowlist,
  systemResolver,
  type AllowedHost,
  type ResolvedAllowlist,
} from '@berth/core/backend-kit';
import { BACKEND, type Cluster } from './cluster.js';
import { IDENTITY } from './identity.js';
import { deleteEgressPolicy } from './egress-policy.js';
import { spawnExec } from './exec-socket.js';
import type { K8sBackendOptions } from './options.js';
import type { PodNetwork } from './pod-network.js';

/** Writing the hosts lines gets this long before it counts as failed. */
const HOSTS_LIMIT_MS = 30_000;

/**
 * One pod's allowlist (see egress-policy.ts): its names resolved, its own policy made or replaced
 * (PodNetwork.allow), the names written into its /etc/hosts (its resolvers are cut off), resolved
 * again while it lives (options.refreshNamesMs), and undone: the hosts lines on a switch to
 * 'public', the policy at removal.
 */
export class PodAllowlist {
  readonly #cluster: Cluster;
  readonly #network: PodNetwork;
  readonly #options: K8sBackendOptions;
  readonly #pod: string;
  /** Whether the pod's own policy was made (deleted at removal). */
  #policy = false;
  /** Whether berth's lines are in the pod's /etc/hosts (removed on 'public'). */
  #hosts = false;
  #refresh: AllowlistRefresh | undefined;
  /** Where the pod's network notices go (its create's). */
  #notify: (notice: NetworkNotice) => void = () => undefined;

  constructor(cluster: Cluster, network: PodNetwork, options: K8sBackendOptions, pod: string) {
    this.#cluster = cluster;
    this.#network = network;
    this.#options = options;
    this.#pod = pod;
  }

  /** The allowlist's blocks and names, its names resolved now (before a pod is made for it, so a name that does not resolve costs no pod). */
  resolve(allowlist: NetworkAllowlist): Promise<ResolvedAllowlist> {
    return resolveAllowlist(allowlist, this.#options.resolveHost ?? systemResolver, { backend: BACKEND, environmentId: this.#pod, engine: 'Kubernetes' });
  }

  /** At create: where the pod's network notices go. */
  bind(notify: (notice: NetworkNotice) => void): void {
    this.#notify = notify;
  }

  /** The running pod (`uid`) put under `allowlist`: its policy, then its hosts lines; returns once both hold, its names' refresh started. */
  async apply(uid: string, allowlist: NetworkAllowlist, resolved: ResolvedAllowlist, signal?: AbortSignal): Promise<void> {
    await this.stop();
    this.#policy = true;
    const put = async (next: ResolvedAllowlist, abort?: AbortSignal) => {
      await this.#network.allow(this.#pod, uid, allowlist, next.blocks, this.#pod, abort);
      await this.#writeHosts(next.hosts);
    };
    await put(resolved, signal);
    const every = refreshNamesMs(this.#options, IDENTITY);
    if (AllowlistRefresh.wanted(resolved, every)) this.#refresh = new AllowlistRefresh(resolved, every, () => this.resolve(allowlist), put, this.#notify);
  }

  /** Back to 'public': berth's hosts lines removed, so names resolve through the pod's resolvers again. */
  async open(): Promise<void> {
    await this.stop();
    if (this.#hosts) await this.#writeHosts([]);
  }

  /** No more refreshes (a switch, the pod's removal); waits for one in flight. */
  async stop(): Promise<void> {
    const refresh = this.#refresh;
    this.#refresh = undefined;
    await refresh?.stop();
  }

  /** The pod's policy deleted, if one was made (the cluster's garbage collector would, later: this is the prompt way). */
  async remove(): Promise<void> {
    await this.stop();
    if (this.#policy) await deleteEgressPolicy(this.#cluster, this.#pod);
  }

  /** berth's lines in the pod's /etc/hosts replaced, by a shell run as the pod's user (an exec has no other). */
  async #writeHosts(hosts: readonly AllowedHost[]): Promise<void> {
    if (hosts.length === 0 && !this.#hosts) return;
    const proc = await spawnExec(this.#cluster, this.#pod, { argv: hostsFileCommand(hosts), env: {}, stdin: false });
    const output: Buffer[] = [];
    proc.stdout.on('data', (chunk: Buffer) => output.push(chunk));
    proc.stderr.on('data', (chunk: Buffer) => output.push(chunk));
    const timer = setTimeout(() => proc.abandon(), HOSTS_LIMIT_MS);
    const { code } = await proc.exit.finally(() => clearTimeout(timer));
    const at = { operation: 'network' as const, backend: BACKEND, environmentId: this.#pod };
    if (code === null)
      throw new BackendUnavailableError({
        ...at,
        message: "writing the allowlist's names into the pod's /etc/hosts ended without an exit status (the exec connection was cut)",
      });
    if (code !== 0)
      throw new ConfigError({
        ...at,
        path: 'spec.network.allow',
        message: `the allowlist's names could not be written into the pod's /etc/hosts (/bin/sh exited ${code}: ${Buffer.concat(output).toString('utf8').trim().slice(-300)}): names need /bin/sh in the image and a pod user who may write /etc/hosts (root); list addresses or ranges instead`,
      });
    this.#hosts = hosts.length > 0;
  }
}
