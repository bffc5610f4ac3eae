// The API server's own record of pods and Secrets in the test namespace, in the order it made the
// changes (etcd's revision, which every resourceVersion on this one-etcd cluster is), taken by
// watches started before the work. A test checks orderings on it that no client-side log can show.
import { KubeConfig, Watch, type V1Pod, type V1Secret } from '@kubernetes/client-node';
import { ADMIN_KUBECONFIG, NAMESPACE, adminApi } from '@berth/test-support/kube-cluster';

export type ApiChange =
  | { rv: bigint; kind: 'pod-added'; name: string; pullSecrets: string[] }
  | { rv: bigint; kind: 'secret-added'; name: string }
  | { rv: bigint; kind: 'secret-deleted'; name: string };

export interface ApiRecord {
  /** Stops the watches; the changes so far, oldest first. */
  stop(): Promise<ApiChange[]>;
}

/** Record pod creations and Secret creations and deletions matching `labelSelector` from now on. */
export async function recordApi(labelSelector: string): Promise<ApiRecord> {
  const kc = new KubeConfig();
  kc.loadFromFile(ADMIN_KUBECONFIG);
  // One list for a starting point both watches share: nothing after it is missed.
  const start = (await adminApi().listNamespacedSecret({ namespace: NAMESPACE, labelSelector, limit: 1 })).metadata?.resourceVersion;
  const changes: ApiChange[] = [];
  const failures: unknown[] = [];
  const controllers: AbortController[] = [];
  const watch = async (resource: 'pods' | 'secrets', onEvent: (type: string, object: V1Pod & V1Secret) => void) => {
    const controller = await new Watch(kc).watch(
      `/api/v1/namespaces/${NAMESPACE}/${resource}`,
      { labelSelector, resourceVersion: start, timeoutSeconds: 3600 },
      onEvent,
      (error: unknown) => {
        if (error && !(error instanceof Error && error.name === 'AbortError')) failures.push(error);
      },
    );
    controllers.push(controller);
  };
  const rv = (o: V1Pod | V1Secret) => BigInt(o.metadata?.resourceVersion ?? '0');
  await watch('pods', (type, pod) => {
    if (type !== 'ADDED') return;
    changes.push({ rv: rv(pod), kind: 'pod-added', name: pod.metadata?.name ?? '?', pullSecrets: (pod.spec?.imagePullSecrets ?? []).map((s) => s.name ?? '') });
  });
  await watch('secrets', (type, secret) => {
    if (type === 'ADDED' || type === 'DELETED')
      changes.push({ rv: rv(secret), kind: type === 'ADDED' ? 'secret-added' : 'secret-deleted', name: secret.metadata?.name ?? '?' });
  });
  return {
    async stop() {
      // Let the last changes arrive.
      await new Promise((r) => setTimeout(r, 1000));
      for (const c of controllers) c.abort();
      if (failures.length > 0) throw new Error(`a watch failed, so the record is incomplete: ${String(failures[0])}`);
      return changes.sort((a, b) => (a.rv < b.rv ? -1 : a.rv > b.rv ? 1 : 0));
    },
  };
}

/**
 * Every way the record breaks "no pod is ever created naming a Secret that is deleted or being
 * deleted": a pod created naming a Secret that does not exist at that moment (not yet made, or
 * already deleted), and a Secret name made again after its deletion (a pod naming it could be
 * checked by the kubelet against the deletion).
 */
export function pullSecretViolations(changes: readonly ApiChange[], ours: (name: string) => boolean): string[] {
  const live = new Set<string>();
  const deleted = new Set<string>();
  const violations: string[] = [];
  for (const change of changes) {
    if (change.kind === 'secret-added') {
      if (deleted.has(change.name)) violations.push(`Secret ${change.name} was made again after its deletion (revision ${change.rv})`);
      live.add(change.name);
    } else if (change.kind === 'secret-deleted') {
      live.delete(change.name);
      deleted.add(change.name);
    } else {
      for (const name of change.pullSecrets.filter(ours)) {
        if (!live.has(name)) {
          violations.push(
            `pod ${change.name} was created naming Secret ${name}, which ${deleted.has(name) ? 'had been deleted' : 'did not exist yet'} (revision ${change.rv})`,
          );
        }
      }
    }
  }
  return violations;
}
