import { setTimeout as sleep } from 'node:timers/promises';
import { Watch, type V1Pod } from '@kubernetes/client-node';
import type { Cluster } from './cluster.js';
import { idempotent, statusOf } from './k8s-errors.js';

/** The server ends each watch after this long (a fresh one follows), so none lives forever. */
const WATCH_SECONDS = 60;
/** Nothing at all (not even a bookmark) for this long: the connection is presumed dead. */
const SILENT_MS = 90_000;
/** Waits between watches that failed in a row: 0.2 s doubling to 5 s. */
const RETRY_MS = [200, 400, 800, 1600, 3200, 5000];
/** Watches that fail in a row before the last failure is the caller's. */
const MAX_FAILURES = 8;

/** What one pod's watch is waiting for: its decision, or the pod gone. */
export type WatchOutcome<T> = { decided: T } | { gone: true };

type Segment<T> = WatchOutcome<T> | { expired: true } | { ended: true; resourceVersion: string } | { failed: unknown; resourceVersion: string };

/**
 * Follow one pod until `decide` returns a value for one of its states, or the pod is gone. Reads
 * the pod, then watches it from that resourceVersion (a field selector on its name, in the
 * namespace). A watch that ends, drops or goes silent is resumed from the last resourceVersion
 * seen; one that expired (410 Gone) starts over with a fresh read. The caller never sees a
 * reconnection, only the pod's states in order.
 */
export async function watchPod<T>(cluster: Cluster, name: string, decide: (pod: V1Pod) => T | undefined, signal: AbortSignal): Promise<WatchOutcome<T>> {
  let resourceVersion: string | undefined;
  let failures = 0;
  for (;;) {
    signal.throwIfAborted();
    if (resourceVersion === undefined) {
      let pod: V1Pod;
      try {
        pod = await idempotent(() => cluster.core.readNamespacedPod({ name, namespace: cluster.namespace }), signal);
      } catch (error) {
        if (statusOf(error) === 404) return { gone: true };
        throw error;
      }
      const decided = decide(pod);
      if (decided !== undefined) return { decided };
      resourceVersion = pod.metadata?.resourceVersion ?? '0';
    }
    const segment = await watchSegment(cluster, name, resourceVersion, decide, signal);
    if ('decided' in segment || 'gone' in segment) return segment;
    if ('expired' in segment) {
      resourceVersion = undefined;
      continue;
    }
    resourceVersion = segment.resourceVersion;
    if ('ended' in segment) {
      failures = 0;
      continue;
    }
    // A watch the API refused (403, 404 on the path...) will not get better by asking again.
    const status = statusOf(segment.failed);
    if (signal.aborted || (status !== undefined && status < 500 && status !== 429) || ++failures >= MAX_FAILURES) throw segment.failed;
    await sleep(RETRY_MS[Math.min(failures, RETRY_MS.length) - 1], undefined, { signal });
  }
}

/** One watch request, from `resourceVersion` until it decides, the pod goes, or the connection ends. */
function watchSegment<T>(
  cluster: Cluster,
  name: string,
  resourceVersion: string,
  decide: (pod: V1Pod) => T | undefined,
  signal: AbortSignal,
): Promise<Segment<T>> {
  return new Promise<Segment<T>>((resolve) => {
    let latest = resourceVersion;
    let controller: AbortController | undefined;
    let settled = false;
    const finish = (segment: Segment<T>) => {
      if (settled) return;
      settled = true;
      clearTimeout(silence);
      signal.removeEventListener('abort', onAbort);
      controller?.abort();
      resolve(segment);
    };
    const onAbort = () => finish({ failed: signal.reason, resourceVersion: latest });
    let silence = setTimeout(() => finish({ ended: true, resourceVersion: latest }), SILENT_MS);
    signal.addEventListener('abort', onAbort, { once: true });
    const onEvent = (type: string, object: { metadata?: { resourceVersion?: string }; code?: number }) => {
      clearTimeout(silence);
      silence = setTimeout(() => finish({ ended: true, resourceVersion: latest }), SILENT_MS);
      if (type === 'ERROR') {
        if (object.code === 410) return finish({ expired: true });
        return finish({
          failed: Object.assign(new Error(`the pod watch failed: ${JSON.stringify(object).slice(0, 300)}`), { statusCode: object.code }),
          resourceVersion: latest,
        });
      }
      latest = object.metadata?.resourceVersion ?? latest;
      if (type === 'DELETED') return finish({ gone: true });
      if (type === 'BOOKMARK') return;
      const decided = decide(object as V1Pod);
      if (decided !== undefined) finish({ decided });
    };
    const onDone = (error: unknown) => {
      if (statusOf(error) === 410) return finish({ expired: true });
      finish(error ? { failed: error, resourceVersion: latest } : { ended: true, resourceVersion: latest });
    };
    new Watch(cluster.kc)
      .watch(
        `/api/v1/namespaces/${encodeURIComponent(cluster.namespace)}/pods`,
        { fieldSelector: `metadata.name=${name}`, resourceVersion, allowWatchBookmarks: true, timeoutSeconds: WATCH_SECONDS },
        onEvent,
        onDone,
      )
      .then(
        (c) => {
          controller = c;
          if (settled) c.abort();
        },
        (error: unknown) => onDone(error),
      );
  });
}
