import { NetworkingV1Api, PatchStrategy, setHeaderOptions, type V1NetworkPolicy, type V1NetworkPolicyEgressRule } from '@kubernetes/client-node';
import type { AllowlistEnforcement } from '@berth/core';
import { LABEL_ENVIRONMENT, LABEL_MANAGED } from '@berth/core/backend-kit';
import { PROXY_PORTS } from './egress-proxy-admission.js';
import { LABEL_EGRESS_PROXY } from './egress-proxy-pod.js';
import type { Cluster } from './cluster.js';
import { idempotent, statusOf } from './k8s-errors.js';
import { LABEL_NETWORK } from './pod-manifest.js';

/**
 * How Kubernetes enforces `network: { allow }`: a NetworkPolicy of the pod's own, whose egress
 * rules are IP blocks (every packet's destination address, any port). Hostnames are resolved by
 * berth when the allowlist is applied (at start, at setNetwork) and allowed as those addresses, so
 * anything sharing an address is let through (resolved again while the pod lives: pod-allowlist.ts);
 * wildcards have no addresses and are refused. The cluster's resolver is not
 * allowed (unless the allowlist lists its address): the allowlist's names are written into the
 * pod's /etc/hosts instead (pod-allowlist.ts), so they resolve in the pod and no other name does.
 * A switch changes the policy, and the enforcer lets connections already open run on (kube-router
 * accepts established flows first).
 */
export const ALLOWLIST_ENFORCEMENT: AllowlistEnforcement = { addresses: 'packet', names: 'resolved', wildcards: false, dns: 'allowed', connections: 'kept' };

/**
 * With options.egressProxy: names and wildcards matched by name at berth's egress proxy pod
 * (egress-proxy-pod.ts), which is the pod's only resolver and the only place its policy lets it
 * reach besides the listed addresses and ranges.
 */
export const PROXY_ENFORCEMENT: AllowlistEnforcement = { addresses: 'packet', names: 'proxy', wildcards: true, dns: 'allowed', connections: 'kept' };

/** The pod's label value while its allowlist policy applies (the label's other values: 'public', 'none'). */
export const ALLOW_LABEL = 'allow';
/** Each pod's allowlist policy selects it by this label (its own name). */
export const LABEL_EGRESS = 'berth.egress';

export function egressPolicyName(pod: string): string {
  return `${pod}-egress`;
}

/**
 * The pod's own policy: it selects the pod (by its name in LABEL_EGRESS) only while its network
 * label says 'allow', allows nothing in (as 'none') and out only to the blocks, each in a rule of
 * its own (kube-router puts one rule's blocks in one set, where one block's `except` could cancel
 * another), nothing else (no DNS: see ALLOWLIST_ENFORCEMENT). Owned by the pod: the cluster
 * removes it with the pod.
 */
export function egressPolicyManifest(input: {
  namespace: string;
  pod: string;
  podUid: string;
  blocks: readonly string[];
  labels: Readonly<Record<string, string>>;
  /** berth's egress proxy pod (its name), reached on its DNS, HTTP and TLS ports only (egress-proxy-pod.ts). */
  proxy?: string;
}): V1NetworkPolicy {
  const egress: V1NetworkPolicyEgressRule[] = input.blocks.map((cidr) => ({ to: [{ ipBlock: { cidr } }] }));
  if (input.proxy)
    egress.push({
      to: [{ podSelector: { matchLabels: { [LABEL_EGRESS_PROXY]: 'true', [LABEL_ENVIRONMENT]: input.proxy } } }],
      ports: [
        { protocol: 'UDP', port: PROXY_PORTS.dns },
        { protocol: 'TCP', port: PROXY_PORTS.dns },
        { protocol: 'TCP', port: PROXY_PORTS.http },
        { protocol: 'TCP', port: PROXY_PORTS.tls },
      ],
    });
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: {
      name: egressPolicyName(input.pod),
      namespace: input.namespace,
      labels: { ...input.labels, [LABEL_MANAGED]: 'true' },
      ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: input.pod, uid: input.podUid, blockOwnerDeletion: false }],
    },
    spec: {
      podSelector: { matchLabels: { [LABEL_NETWORK]: ALLOW_LABEL, [LABEL_EGRESS]: input.pod } },
      policyTypes: ['Ingress', 'Egress'],
      egress,
    },
  };
}

/** Creates the pod's policy, or replaces its rules (a new allowlist on the same pod). */
export async function applyEgressPolicy(cluster: Cluster, body: V1NetworkPolicy, signal?: AbortSignal): Promise<void> {
  const api = cluster.api(NetworkingV1Api);
  const { namespace } = cluster;
  const name = body.metadata?.name ?? '';
  const created = await idempotent(
    () =>
      api.createNamespacedNetworkPolicy({ namespace, body }).then(
        () => true,
        (error: unknown) => {
          if (statusOf(error) === 409) return false;
          throw error;
        },
      ),
    signal,
  );
  if (created) return;
  await idempotent(
    () => api.patchNamespacedNetworkPolicy({ name, namespace, body: { spec: body.spec } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch)),
    signal,
  );
}

/** Removes the pod's policy (its owner's deletion does too, later: this is the prompt way). */
export async function deleteEgressPolicy(cluster: Cluster, pod: string): Promise<void> {
  const api = cluster.api(NetworkingV1Api);
  await idempotent(() => api.deleteNamespacedNetworkPolicy({ name: egressPolicyName(pod), namespace: cluster.namespace })).catch((error: unknown) => {
    if (statusOf(error) !== 404) throw error;
  });
}
