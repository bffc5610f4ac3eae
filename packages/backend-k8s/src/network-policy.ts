import { NetworkingV1Api, type V1NetworkPolicy } from '@kubernetes/client-node';
import { LABEL_MANAGED } from '@berth/core/backend-kit';
import type { Cluster } from './cluster.js';
import { idempotent, statusOf } from './k8s-errors.js';
import { LABEL_NETWORK } from './pod-manifest.js';

/** The namespace's one deny-all policy, shared by every berth process working there. */
export const NETWORK_POLICY = 'berth-network-none';

/**
 * Selects the pods labelled `berth.network=none` and allows them nothing, in or out (no rules under
 * both policy types). It carries berth's managed label and the backend's labels but no session or
 * owner: it belongs to no process, and sweep leaves it (removing it would put the running 'none'
 * sandboxes of other processes online; with no pod so labelled it does nothing).
 */
export function networkPolicyManifest(namespace: string, labels: Readonly<Record<string, string>>): V1NetworkPolicy {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: NETWORK_POLICY, namespace, labels: { ...labels, [LABEL_MANAGED]: 'true' } },
    spec: { podSelector: { matchLabels: { [LABEL_NETWORK]: 'none' } }, policyTypes: ['Ingress', 'Egress'] },
  };
}

/** Creates the policy unless it is there (another process may have made it: 409 is success). */
export async function ensureNetworkPolicy(cluster: Cluster, labels: Readonly<Record<string, string>>, signal?: AbortSignal): Promise<void> {
  const api = cluster.api(NetworkingV1Api);
  const { namespace } = cluster;
  try {
    await idempotent(() => api.readNamespacedNetworkPolicy({ name: NETWORK_POLICY, namespace }), signal);
    return;
  } catch (error) {
    if (statusOf(error) !== 404) throw error;
  }
  await idempotent(
    () =>
      api.createNamespacedNetworkPolicy({ namespace, body: networkPolicyManifest(namespace, labels) }).catch((error: unknown) => {
        if (statusOf(error) === 409) return undefined;
        throw error;
      }),
    signal,
  );
}
