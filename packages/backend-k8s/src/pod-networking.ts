import { isAllowlist, type EnvironmentSpec, type NetworkMode, type NetworkNotice, type Operation } from '@berth/core';
import type { CreateContext, ResolvedAllowlist } from '@berth/core/backend-kit';
import type { V1Probe } from '@kubernetes/client-node';
import type { Cluster } from './cluster.js';
import { mapApiError } from './k8s-errors.js';
import type { K8sBackendOptions } from './options.js';
import { PodAllowlist } from './pod-allowlist.js';
import type { PodNetwork } from './pod-network.js';
import type { EgressProxyPod } from './egress-proxy-pod.js';

/**
 * One pod's network through its life: before the pod is made (the namespace's deny-all policy, an
 * allowlist's names resolved), once it runs ('none' proved, an allowlist applied, a switchable
 * 'public' checked), switched (setNetwork), and at removal (its allowlist's policy). The policy
 * machinery itself is PodNetwork's (shared by the backend's pods) and PodAllowlist's.
 */
export class PodNetworking {
  readonly #network: PodNetwork;
  readonly #allowlist: PodAllowlist;
  readonly #id: string;
  readonly #spec: EnvironmentSpec;
  /** An allowlist's names as resolved before the pod was made, applied once it runs. */
  #resolved: ResolvedAllowlist | undefined;

  constructor(shared: { cluster: Cluster; network: PodNetwork; options: K8sBackendOptions; egressProxy: EgressProxyPod }, id: string, spec: EnvironmentSpec) {
    this.#network = shared.network;
    this.#allowlist = new PodAllowlist(shared, id);
    this.#id = id;
    this.#spec = spec;
  }

  /** Starting on 'none' (an allowlist starts there too): the kubelet's startup probe checks it holds before the container counts as started. */
  get probed(): boolean {
    return this.#spec.network === 'none' || isAllowlist(this.#spec.network);
  }

  /** Network 'none', an allowlist (which starts on 'none'), or a switch later: the pod relies on the namespace's deny-all NetworkPolicy. */
  get #needsPolicy(): boolean {
    return this.probed || this.#spec.networkSwitch;
  }

  /**
   * Before the pod is made: the deny-all policy where the pod needs it, an allowlist's names
   * resolved (a name that does not resolve costs no pod); the startup probe for its manifest.
   */
  async beforeCreate(notify: (notice: NetworkNotice) => void, signal: AbortSignal): Promise<{ startupProbe?: V1Probe }> {
    this.#allowlist.bind(notify);
    if (this.#needsPolicy) await this.#call('start', () => this.#network.prepare(this.#id, signal));
    const network = this.#spec.network;
    if (isAllowlist(network)) this.#resolved = await this.#call('start', () => this.#allowlist.resolve(network, signal));
    return this.probed ? { startupProbe: this.#network.startupProbe() } : {};
  }

  /** Once the pod (`uid`, on `node`) runs: its network holds as asked before its first command. */
  async afterRunning(uid: string, node: string | undefined, ctx: CreateContext): Promise<void> {
    const network = this.#spec.network;
    if (this.probed) {
      // Cut off, as the kubelet's startup probe saw; the node's positive control once per node.
      ctx.progress({ status: `network 'none' holds in the pod; proving the policy on node ${node ?? '?'} if it is new` });
      if (node) await this.#call('start', () => this.#network.provedOnNode(this.#id, node, this.#id, ctx.signal));
      if (isAllowlist(network)) {
        // Started cut off; opened to the allowlist only now, by the pod's own policy.
        ctx.progress({ status: `applying the allowlist (${network.allow.length} entries) and checking it holds in the pod` });
        const resolved = this.#resolved;
        if (!resolved) throw new Error('unreachable: an allowlist is resolved before its pod is made');
        await this.#call('start', () => this.#allowlist.apply(uid, network, resolved, ctx.signal));
      }
      ctx.progress({ reached: 'network' });
    } else if (this.#needsPolicy) {
      ctx.progress({ status: `checking from inside that network '${network}' holds` });
      await this.#call('start', () => this.#network.settle(this.#id, network, this.#id, ctx.signal));
      ctx.progress({ reached: 'network' });
    }
  }

  /** Relabels the running pod (`uid`; an allowlist: its own policy first); returns once the new state holds inside it (see PodNetwork). */
  async set(mode: NetworkMode, uid: string): Promise<void> {
    await this.#call('network', async () => {
      if (isAllowlist(mode)) return this.#allowlist.apply(uid, mode, await this.#allowlist.resolve(mode));
      await this.#allowlist.stop();
      await this.#network.label(this.#id, mode);
      await this.#network.settle(this.#id, mode, this.#id);
      if (mode === 'public') await this.#allowlist.open();
    });
  }

  /** No refresh of its allowlist may start on a pod being removed: before the pod's deletion. */
  stop(): Promise<void> {
    return this.#allowlist.stop();
  }

  /** After the pod's deletion: its allowlist's policy, if one was made. */
  remove(): Promise<void> {
    return this.#call('teardown', () => this.#allowlist.remove());
  }

  /** API failures of the network calls in berth's taxonomy; berth's own errors pass through. */
  async #call<T>(operation: Operation, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw mapApiError(error, { operation, environmentId: this.#id }, { podGone: operation === 'network' }) ?? error;
    }
  }
}
