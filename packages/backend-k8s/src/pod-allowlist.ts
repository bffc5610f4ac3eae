import { allowEntries, ConfigError, type NetworkAllowlist, type NetworkNotice } from '@berth/core';
import { resolvConfAt, SandboxAllowlist, type ResolvedAllowlist } from '@berth/core/backend-kit';
import { BACKEND, type Cluster } from './cluster.js';
import { IDENTITY } from './identity.js';
import { deleteEgressPolicy } from './egress-policy.js';
import { type EgressProxyPod, type ProxyPod, proxyOptions } from './egress-proxy-pod.js';
import { idempotent } from './k8s-errors.js';
import { spawnExec } from './exec-socket.js';
import type { K8sBackendOptions } from './options.js';
import type { PodNetwork } from './pod-network.js';

/** Writing the hosts lines gets this long before it counts as failed. */
const HOSTS_LIMIT_MS = 30_000;

/** An allowlist's names and wildcards, which go through berth's egress proxy pod under options.egressProxy. */
function namedEntries(allowlist: NetworkAllowlist): string[] {
  return allowEntries(allowlist).flatMap((e) => (e.kind === 'host' ? [e.host] : e.kind === 'wildcard' ? [`*.${e.suffix}`] : []));
}

/** An allowlist's addresses and ranges, as CIDRs: what its policy lets out as they are. */
function givenBlocks(allowlist: NetworkAllowlist): string[] {
  return allowEntries(allowlist).flatMap((e) => (e.kind === 'range' ? [e.cidr] : e.kind === 'address' ? [`${e.address}/32`] : []));
}

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
  readonly #proxied: boolean;
  readonly #proxy: EgressProxyPod;
  /** Whether the pod's own policy was made (deleted at removal). */
  #policy = false;
  /** The proxy pod while this pod holds it (acquired at its first allowlist with names, released at removal). */
  #held: ProxyPod | undefined;
  /** Where the pod is admitted at the proxy (its address), while it is. */
  #admitted: string | undefined;
  /** The pod's resolv.conf as the kubelet wrote it, while the proxy's is in its place. */
  #kubeletResolvConf: string | undefined;

  constructor(shared: { cluster: Cluster; network: PodNetwork; options: K8sBackendOptions; egressProxy: EgressProxyPod }, pod: string) {
    const { cluster, network, options } = shared;
    this.#cluster = cluster;
    this.#network = network;
    this.#pod = pod;
    this.#proxied = proxyOptions(options) !== undefined;
    this.#proxy = shared.egressProxy;
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
  async resolve(allowlist: NetworkAllowlist, signal?: AbortSignal): Promise<ResolvedAllowlist> {
    if (!this.#proxied || namedEntries(allowlist).length === 0) return this.#names.resolve(allowlist);
    // The proxy pod made before the sandbox's (one it cannot start costs no sandbox pod).
    this.#held ??= await this.#proxy.acquire(this.#pod, signal);
    return { blocks: givenBlocks(allowlist), hosts: [] };
  }

  /** At create: where the pod's network notices go. */
  bind(notify: (notice: NetworkNotice) => void): void {
    this.#names.bind(notify);
  }

  /** The running pod (`uid`) put under `allowlist`: its policy, then its hosts lines; returns once both hold, its names' refresh started. */
  async apply(uid: string, allowlist: NetworkAllowlist, resolved: ResolvedAllowlist, signal?: AbortSignal): Promise<void> {
    this.#policy = true;
    const named = this.#proxied ? namedEntries(allowlist) : [];
    if (named.length === 0) {
      await this.#withdraw();
      return this.#names.apply(allowlist, resolved, (blocks, abort) => this.#network.allow(this.#pod, uid, allowlist, blocks, this.#pod, abort), { signal });
    }
    await this.#names.stop();
    this.#held ??= await this.#proxy.acquire(this.#pod, signal);
    const proxy = this.#held;
    // Admitted before the policy lets it reach the proxy, resolving there before its first command.
    this.#admitted = await this.#address();
    await this.#proxy.admit(proxy, this.#admitted, named, this.#pod);
    await this.#resolveAt(proxy.address);
    await this.#network.allow(this.#pod, uid, allowlist, resolved.blocks, this.#pod, signal, proxy.name);
  }

  /** Back to 'public': berth's hosts lines removed and the kubelet's resolv.conf back, so names resolve through the pod's resolvers again. */
  async open(): Promise<void> {
    await this.#withdraw();
    if (this.#kubeletResolvConf !== undefined) {
      await this.#writeResolvConf(this.#kubeletResolvConf);
      this.#kubeletResolvConf = undefined;
    }
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
    const held = this.#held;
    this.#held = undefined;
    if (!held) return;
    // The pod is gone: its address may go to another pod, so its admission goes first.
    await this.#withdraw().catch(() => undefined);
    await this.#proxy.release();
  }

  /** The pod's admission at the proxy withdrawn, if it has one. */
  async #withdraw(): Promise<void> {
    const source = this.#admitted;
    if (!source || !this.#held) return;
    this.#admitted = undefined;
    await this.#proxy.admit(this.#held, source, [], this.#pod);
  }

  /** The pod's address: what the proxy tells it apart by. */
  async #address(): Promise<string> {
    const { core, namespace } = this.#cluster;
    const pod = await idempotent(() => core.readNamespacedPod({ name: this.#pod, namespace }));
    const address = pod.status?.podIP;
    if (!address) throw new Error(`unreachable: pod ${this.#pod} runs and has no address`);
    return address;
  }

  /** The proxy as the pod's only resolver (see resolvConfAt): the kubelet's file kept for 'public'. */
  async #resolveAt(host: string): Promise<void> {
    if (this.#kubeletResolvConf === undefined) {
      const { code, output } = await this.#run(['cat', '/etc/resolv.conf']);
      if (code !== 0) throw this.#resolvConfError(`cat exited ${code}: ${output.trim().slice(-300)}`);
      this.#kubeletResolvConf = output;
    }
    await this.#writeResolvConf(resolvConfAt(this.#kubeletResolvConf, host, { search: false }));
  }

  /** Replaces /etc/resolv.conf's content in place (the kubelet bind-mounts it: a rename would fail). */
  async #writeResolvConf(content: string): Promise<void> {
    const { code, output } = await this.#run(['/bin/sh', '-c', 'printf %s "$1" > /etc/resolv.conf', 'berth-resolv-conf', content]);
    if (code !== 0) throw this.#resolvConfError(`/bin/sh exited ${code}: ${output.trim().slice(-300)}`);
  }

  #resolvConfError(why: string): ConfigError {
    return new ConfigError({
      operation: 'network',
      backend: BACKEND,
      environmentId: this.#pod,
      path: 'spec.network.allow',
      message: `the pod's /etc/resolv.conf could not be pointed at berth's egress proxy (${why}): names under options.egressProxy need /bin/sh in the image and a pod user who may write /etc/resolv.conf (root); list addresses or ranges instead`,
    });
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
