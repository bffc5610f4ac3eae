import { setTimeout as sleep } from 'node:timers/promises';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { V1Probe } from '@kubernetes/client-node';
import {
  BackendUnavailableError,
  CapabilityError,
  ConfigError,
  addressAllowed,
  allowEntries,
  describeNetwork,
  isAllowlist,
  remedied,
  type NetworkAllowlist,
  type NetworkMode,
} from '@berth/core';
import { ALLOW_LABEL, LABEL_EGRESS, applyEgressPolicy, egressPolicyManifest } from './egress-policy.js';
import { BACKEND, type Cluster } from './cluster.js';
import { idempotent } from './k8s-errors.js';
import { NETWORK_POLICY, ensureNetworkPolicy } from './network-policy.js';
import { probeFromPod, serviceHostOf, startupProbe, type ProbeResult } from './network-probe.js';
import type { K8sBackendOptions } from './options.js';
import { LABEL_NETWORK } from './pod-manifest.js';

/** How a message that cannot check the network from inside says what to set. */
const PROBE_FIX = (compose: (fix: string) => string) =>
  remedied('network-probe', 'set options.networkPolicy.probe to an address every public pod reaches', compose);

const DEFAULT_WAIT_MS = 30_000;
const POLL_MS = 200;

/**
 * Network 'none' on Kubernetes, for one backend instance: the namespace's deny-all policy, whether
 * the cluster enforces it (declared in options.networkPolicy.enforced, or proved once by the first
 * pod that needs it), and the label switch that returns only once the new state holds in the pod.
 */
export class PodNetwork {
  readonly #cluster: () => Cluster;
  readonly #options: K8sBackendOptions;
  #policy: Promise<void> | undefined;
  /** true/false once known; a promise while a pod proves it. */
  #enforced: boolean | Promise<boolean> | undefined;
  /** Nodes where a pod was seen cut off under the policy and reaching the probe address without it; a promise while one proves it. */
  readonly #nodes = new Map<string, Promise<void> | true>();
  /** The API server's service address as pods see it (the default probe target), once read from a pod. */
  #serviceHost: Promise<string | undefined> | undefined;

  constructor(cluster: () => Cluster, options: K8sBackendOptions) {
    this.#cluster = cluster;
    this.#options = options;
    this.#enforced = options.networkPolicy?.enforced;
  }

  /** true or false once declared or proved; undefined while unknown (or being proved). */
  get verdict(): boolean | undefined {
    return typeof this.#enforced === 'boolean' ? this.#enforced : undefined;
  }

  get declared(): boolean {
    return this.#options.networkPolicy?.enforced !== undefined;
  }

  get #target() {
    return this.#options.networkPolicy?.probe;
  }

  get #waitMs() {
    return this.#options.networkPolicy?.waitMs ?? DEFAULT_WAIT_MS;
  }

  #describeTarget(): string {
    const t = this.#target;
    return t ? `${t.host}:${t.port} (options.networkPolicy.probe)` : "the API server's service (KUBERNETES_SERVICE_HOST:KUBERNETES_SERVICE_PORT)";
  }

  /** Before a pod that needs the policy is made: refused if the cluster is known not to enforce it; the policy made if absent. */
  async prepare(environmentId: string, signal?: AbortSignal): Promise<void> {
    if (this.#enforced === false) throw this.#notEnforced(environmentId);
    this.#policy ??= ensureNetworkPolicy(this.#cluster(), this.#options.labels ?? {}, signal).catch((error: unknown) => {
      this.#policy = undefined;
      throw error;
    });
    await this.#policy;
  }

  /** The kubelet's check that a pod starting on 'none' is cut off (see startupProbe). */
  startupProbe(): V1Probe {
    return startupProbe(this.#target, this.#waitMs);
  }

  /**
   * After a pod started on 'none' (its startup probe saw it cut off): the positive control, once per
   * node. The first such pod of each node is relabelled public until it reaches the probe address,
   * then 'none' until cut off again (two execs and two patches per node, none per later pod), so a
   * pod cut off means the policy holds there, not that the address is unreachable from that node.
   * A new node is proved again; `networkPolicy.enforced: true` skips it.
   */
  async provedOnNode(pod: string, node: string, environmentId: string, signal?: AbortSignal): Promise<void> {
    if (this.#options.networkPolicy?.enforced === true) return;
    for (;;) {
      const known = this.#nodes.get(node);
      if (known === true) return;
      if (known) {
        // Another pod's proof: its verdict is this pod's, unless it ended for that pod's own reasons.
        const failed = await known.then(
          () => undefined,
          (error: unknown) => error,
        );
        if (failed === undefined) return;
        if (ConfigError.isInstance(failed) || CapabilityError.isInstance(failed)) throw this.#shared(failed, environmentId);
        continue;
      }
      const proof = this.#proveOnNode(pod, environmentId, signal);
      this.#nodes.set(node, proof);
      try {
        await proof;
        this.#nodes.set(node, true);
        this.#enforced ??= true;
        return;
      } catch (error) {
        this.#nodes.delete(node);
        throw error;
      }
    }
  }

  async #proveOnNode(pod: string, environmentId: string, signal?: AbortSignal): Promise<void> {
    await this.label(pod, 'public');
    const reached = await this.#await(pod, 'reached', environmentId, signal).catch(async (error: unknown) => {
      await this.label(pod, 'none');
      throw error;
    });
    await this.label(pod, 'none');
    if (!reached) {
      throw this.#unreachable(environmentId);
    }
    if (!(await this.#await(pod, 'blocked', environmentId, signal))) throw this.#didNotHold('none', environmentId);
  }

  /**
   * A pod whose startup probe never saw it cut off: what its last failure printed, in berth's
   * terms. On a node already proved the enforcer is slow (transient); elsewhere nothing enforces it.
   */
  startupFailure(found: ProbeResult | undefined, node: string | undefined, environmentId: string): BackendUnavailableError | CapabilityError | ConfigError {
    if (found === 'no-tool' || found === 'no-address') return this.#cannotProbe(found, environmentId);
    if (found === 'reached' && !(node && this.#nodes.get(node) === true) && this.#options.networkPolicy?.enforced !== true) {
      // Remembered: later specs asking for 'none' are refused before a pod is made.
      if (this.#enforced !== true) this.#enforced = false;
      return this.#notEnforced(environmentId);
    }
    return this.#didNotHold('none', environmentId);
  }

  /** Sets the pod's network label (a JSON merge patch of its labels): 'public', 'none', or 'allow' with the pod's own policy (see allow()). */
  async label(pod: string, mode: NetworkMode): Promise<void> {
    const { core, namespace } = this.#cluster();
    const labels = isAllowlist(mode) ? { [LABEL_NETWORK]: ALLOW_LABEL, [LABEL_EGRESS]: pod } : { [LABEL_NETWORK]: mode };
    await idempotent(() =>
      core.patchNamespacedPod({ name: pod, namespace, body: { metadata: { labels } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch)),
    );
  }

  /**
   * Puts a running pod under `allowlist` (see egress-policy.ts): its own policy made or replaced,
   * then its label, then returns once it holds inside the pod. Enforcement not yet known is proved
   * first, on 'none', as settle() does; the pod was started on 'none' unless it switches from 'public'.
   */
  async allow(
    pod: string,
    podUid: string,
    allowlist: NetworkAllowlist,
    blocks: readonly string[],
    environmentId: string,
    signal?: AbortSignal,
    proxy?: string,
  ): Promise<void> {
    if (this.#enforced === false) throw this.#notEnforced(environmentId);
    if (this.#enforced === undefined) {
      await this.label(pod, 'none');
      await this.settle(pod, 'none', environmentId, signal);
    }
    const cluster = this.#cluster();
    signal?.throwIfAborted();
    await applyEgressPolicy(
      cluster,
      egressPolicyManifest({ namespace: cluster.namespace, pod, podUid, blocks, labels: this.#options.labels ?? {}, ...(proxy ? { proxy } : {}) }),
      signal,
    );
    await this.label(pod, allowlist);
    // Checked against what the policy holds: its names as the addresses they resolved to.
    await this.settle(pod, { allow: blocks }, environmentId, signal);
  }

  /**
   * What the probe address should see under `mode`: reached on 'public' and under an allowlist that
   * lists it (options.networkPolicy.probe's host, or every address for the default, the API
   * server's service, whose address the runner cannot know), blocked otherwise.
   */
  #expect(mode: NetworkMode, serviceHost?: string): 'reached' | 'blocked' {
    if (!isAllowlist(mode)) return mode === 'none' ? 'blocked' : 'reached';
    const entries = allowEntries(mode);
    const host = this.#target?.host ?? serviceHost;
    if (host) return addressAllowed(host, entries) ? 'reached' : 'blocked';
    return entries.some((e) => e.kind === 'range' && e.prefix === 0) ? 'reached' : 'blocked';
  }

  /**
   * The default target's address, for an allowlist that may list it (a range such as 10.0.0.0/8
   * holds most clusters' service addresses): read once from a pod, every pod sees the same.
   */
  async #serviceHostFor(pod: string, mode: NetworkMode): Promise<string | undefined> {
    if (this.#target || !isAllowlist(mode) || !allowEntries(mode).some((e) => e.kind === 'range' || e.kind === 'address')) return undefined;
    this.#serviceHost ??= serviceHostOf(this.#cluster(), pod).catch((error: unknown) => {
      this.#serviceHost = undefined;
      throw error;
    });
    return this.#serviceHost;
  }

  /**
   * Returns once `mode` holds inside the pod (its label already set). The first pod of a backend
   * whose enforcement is unknown proves it on the way: cut off on 'none', reaching the probe address
   * on 'public', back where it started, before any command of the task runs.
   */
  async settle(pod: string, mode: NetworkMode, environmentId: string, signal?: AbortSignal): Promise<void> {
    for (;;) {
      if (this.#enforced === undefined && !isAllowlist(mode)) {
        const proof = this.#prove(pod, mode, environmentId, signal);
        this.#enforced = proof;
        try {
          this.#enforced = await proof;
        } catch (error) {
          // Not a verdict (the probe address unreachable, the pod gone): the next pod proves it again.
          this.#enforced = undefined;
          throw error;
        }
        if (!this.#enforced) throw this.#notEnforced(environmentId);
        return;
      }
      const outcome = await Promise.resolve(this.#enforced).then(
        (verdict) => ({ verdict }),
        (error: unknown) => ({ error }),
      );
      if ('error' in outcome) {
        // The proof this pod waited on ended without a verdict. Where it cannot be proved at all (the
        // probe address unreachable from a public pod, no tool to probe with), every pod that waited
        // gets the same answer; otherwise (that pod lost, its start aborted) this pod proves it
        // itself. Never skipped: a pod that only checked it is cut off would pass where nothing
        // enforces anything and the probe address is simply unreachable.
        if (ConfigError.isInstance(outcome.error) || CapabilityError.isInstance(outcome.error)) throw this.#shared(outcome.error, environmentId);
        continue;
      }
      if (outcome.verdict === false) throw this.#notEnforced(environmentId);
      const serviceHost = await this.#serviceHostFor(pod, mode);
      if (!(await this.#await(pod, this.#expect(mode, serviceHost), environmentId, signal))) throw this.#didNotHold(mode, environmentId, serviceHost);
      return;
    }
  }

  /** Another pod's proof's refusal, said for this pod. */
  #shared(error: ConfigError | CapabilityError, environmentId: string): ConfigError | CapabilityError {
    const common = { operation: 'start' as const, backend: BACKEND, environmentId, message: error.message, cause: error };
    return ConfigError.isInstance(error)
      ? new ConfigError({ ...common, ...(error.path !== undefined ? { path: error.path } : {}) })
      : new CapabilityError({ ...common, capability: error.capability });
  }

  /** Enforced? Decided on this pod, which ends on the label it started with. */
  async #prove(pod: string, mode: NetworkMode, environmentId: string, signal?: AbortSignal): Promise<boolean> {
    const other: NetworkMode = mode === 'none' ? 'public' : 'none';
    const states = mode === 'none' ? (['blocked', 'reached'] as const) : (['reached', 'blocked'] as const);
    for (const [i, want] of [...states, states[0]].entries()) {
      if (i > 0) await this.label(pod, i === 1 ? other : mode);
      if (await this.#await(pod, want, environmentId, signal)) continue;
      // It held once already: the enforcer is slow or failing, not absent (no verdict).
      if (i === 2) throw this.#didNotHold(mode, environmentId);
      if (want === 'reached') {
        if (i === 1) await this.label(pod, mode); // back to 'none' before giving up
        throw this.#unreachable(environmentId);
      }
      // Still reaching it under the deny-all policy: nothing enforces it.
      if (mode === 'public') await this.label(pod, mode);
      return false;
    }
    return true;
  }

  /** Probes until the pod sees `want` or waitMs runs out; true when it did. */
  async #await(pod: string, want: 'reached' | 'blocked', environmentId: string, signal?: AbortSignal): Promise<boolean> {
    const deadline = Date.now() + this.#waitMs;
    for (;;) {
      // The start's deadline or the caller's abort: stop probing (the kit says why).
      signal?.throwIfAborted();
      const found = await probeFromPod(this.#cluster(), pod, this.#target);
      if (found === want) return true;
      if (found === 'no-tool' || found === 'no-address') throw this.#cannotProbe(found, environmentId);
      if (Date.now() >= deadline) return false;
      await sleep(POLL_MS);
    }
  }

  /** A public pod cannot reach the probe address: nothing to prove enforcement with. */
  #unreachable(environmentId: string): ConfigError {
    return new ConfigError({
      operation: 'start',
      backend: BACKEND,
      environmentId,
      path: 'options.networkPolicy.probe',
      ...PROBE_FIX(
        (fix) =>
          `a public pod cannot reach ${this.#describeTarget()} within ${this.#waitMs} ms, so whether NetworkPolicy is enforced cannot be checked from inside: ${fix}`,
      ),
    });
  }

  #notEnforced(environmentId: string): CapabilityError {
    return new CapabilityError({
      operation: 'start',
      backend: BACKEND,
      environmentId,
      capability: 'network',
      message: `the cluster does not enforce NetworkPolicy: a pod under berth's deny-all policy (${NETWORK_POLICY}, pods labelled ${LABEL_NETWORK}=none) still reached ${this.#describeTarget()} after ${this.#waitMs} ms, so network 'none' would be online; install a NetworkPolicy enforcer (Calico, Cilium, kube-router...) or run the task with network 'public'`,
    });
  }

  #didNotHold(mode: NetworkMode, environmentId: string, serviceHost?: string): BackendUnavailableError {
    const what = this.#expect(mode, serviceHost) === 'blocked' ? `cut off from ${this.#describeTarget()}` : `reaching ${this.#describeTarget()}`;
    return new BackendUnavailableError({
      operation: 'network',
      backend: BACKEND,
      environmentId,
      message: `the pod was not ${what} within ${this.#waitMs} ms of its ${LABEL_NETWORK} label becoming '${isAllowlist(mode) ? ALLOW_LABEL : mode}' (network ${describeNetwork(mode)}): the cluster's NetworkPolicy enforcer is slow or failing`,
    });
  }

  #cannotProbe(found: ProbeResult, environmentId: string): ConfigError | CapabilityError {
    if (found === 'no-address')
      return new ConfigError({
        operation: 'start',
        backend: BACKEND,
        environmentId,
        path: 'options.networkPolicy.probe',
        ...PROBE_FIX((fix) => `the pod has no KUBERNETES_SERVICE_HOST to check its network from inside: ${fix}`),
      });
    return new CapabilityError({
      operation: 'start',
      backend: BACKEND,
      environmentId,
      capability: 'network',
      message:
        "network 'none' and switching on Kubernetes are checked from inside the pod with a TCP connect, and this image has none of python3, bash (with timeout), nc or perl to make one: add one to the image, or run the task with network 'public'",
    });
  }
}
