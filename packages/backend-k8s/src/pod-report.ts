import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';
import type { Cluster } from './cluster.js';
import { idempotent } from './k8s-errors.js';
import { CONTAINER } from './pod-manifest.js';

/**
 * What a pod looked like when it failed to start: its phase, its container's state and its recent
 * events. The cause of every start failure, so that result.json shows what the cluster said.
 */
export class PodStateReport extends Error {
  readonly events: readonly string[];
  constructor(message: string, events: readonly string[]) {
    super(message);
    this.name = 'PodState';
    this.events = events;
  }
}

function containerState(pod: V1Pod | undefined): string {
  const c = pod?.status?.containerStatuses?.find((s) => s.name === CONTAINER);
  if (!c?.state) return 'no container status';
  if (c.state.waiting) return `waiting ${c.state.waiting.reason ?? ''}${c.state.waiting.message ? ` (${c.state.waiting.message})` : ''}`;
  if (c.state.terminated) return `terminated ${c.state.terminated.reason ?? ''} (exit ${c.state.terminated.exitCode})`;
  return `running, ${c.restartCount ?? 0} restarts`;
}

/** The pod's recent events, oldest first, as "Warning Failed: <message>". */
export async function podEvents(cluster: Cluster, name: string): Promise<CoreV1Event[]> {
  try {
    const list = await idempotent(() => cluster.core.listNamespacedEvent({ namespace: cluster.namespace, fieldSelector: `involvedObject.name=${name}` }));
    return list.items;
  } catch {
    return [];
  }
}

export function podReport(name: string, pod: V1Pod | undefined, events: readonly CoreV1Event[]): PodStateReport {
  const lines = events.slice(-10).map((e) => `${e.type ?? ''} ${e.reason ?? ''}: ${e.message ?? ''}`.trim());
  const phase = pod?.status?.phase ?? 'unknown';
  return new PodStateReport(`pod ${name}: phase ${phase}; ${CONTAINER}: ${containerState(pod)}${lines.length ? `; events: ${lines.join(' | ')}` : ''}`, lines);
}
