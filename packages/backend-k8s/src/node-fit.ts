import type { V1Node, V1NodeSelectorRequirement, V1Pod, V1Taint, V1Toleration } from '@kubernetes/client-node';

/**
 * Whether a node could take the pod, judged the way the scheduler's first filters do: the node is
 * Ready and schedulable, the pod tolerates its NoSchedule/NoExecute taints (DiskPressure arrives as
 * one), the node selector matches, and the node's allocatable resources cover the pod's requests.
 * What other pods already use is not counted (that needs a cluster-wide pod list): this finds the
 * run that can never be scheduled, not the one that must queue.
 */
export function nodeMisfits(node: V1Node, pod: V1Pod): string[] {
  const reasons: string[] = [];
  const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
  if (ready?.status !== 'True') reasons.push(`not Ready${ready?.reason ? ` (${ready.reason})` : ''}`);
  if (node.spec?.unschedulable) reasons.push('cordoned (unschedulable)');
  const tolerations = pod.spec?.tolerations ?? [];
  for (const taint of node.spec?.taints ?? []) {
    if (taint.effect === 'PreferNoSchedule') continue;
    if (!tolerations.some((t) => tolerates(t, taint))) reasons.push(`taint ${taint.key}${taint.value ? `=${taint.value}` : ''}:${taint.effect} not tolerated`);
  }
  const labels = node.metadata?.labels ?? {};
  for (const [key, value] of Object.entries(pod.spec?.nodeSelector ?? {})) {
    if (labels[key] !== value) reasons.push(`nodeSelector ${key}=${value} does not match`);
  }
  const terms = pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [];
  // Terms are ORed, a term's expressions ANDed (GPU types are one In expression).
  if (terms.length > 0 && !terms.some((term) => (term.matchExpressions ?? []).every((e) => matches(e, labels)))) {
    const wanted = terms.flatMap((term) => (term.matchExpressions ?? []).map((e) => `${e.key} ${e.operator} ${(e.values ?? []).join(', ')}`.trim()));
    reasons.push(`node affinity (${wanted.join('; ')}) does not match`);
  }
  const allocatable = node.status?.allocatable ?? {};
  const requests: Record<string, string> = {};
  for (const container of pod.spec?.containers ?? []) Object.assign(requests, container.resources?.requests ?? {});
  for (const [resource, wanted] of Object.entries(requests)) {
    const has = allocatable[resource];
    if (has === undefined) {
      reasons.push(`has no ${resource}`);
    } else if (quantity(wanted) > quantity(has)) {
      reasons.push(`${resource}: the pod asks ${wanted}, the node has ${has} in all`);
    }
  }
  return reasons;
}

/** One node selector requirement against a node's labels (the operators a manifest may use). */
function matches(e: V1NodeSelectorRequirement, labels: Record<string, string>): boolean {
  const value = labels[e.key];
  switch (e.operator) {
    case 'In':
      return value !== undefined && (e.values ?? []).includes(value);
    case 'NotIn':
      return value === undefined || !(e.values ?? []).includes(value);
    case 'Exists':
      return value !== undefined;
    case 'DoesNotExist':
      return value === undefined;
    case 'Gt':
    case 'Lt': {
      const [limit] = (e.values ?? []).map(Number);
      const n = Number(value);
      return value !== undefined && limit !== undefined && (e.operator === 'Gt' ? n > limit : n < limit);
    }
    default:
      return false;
  }
}

/** The scheduler's toleration rule for one taint. */
export function tolerates(toleration: V1Toleration, taint: V1Taint): boolean {
  if (toleration.effect && toleration.effect !== taint.effect) return false;
  if (toleration.operator === 'Exists') return !toleration.key || toleration.key === taint.key;
  return toleration.key === taint.key && (toleration.value ?? '') === (taint.value ?? '');
}

const SUFFIX: Record<string, number> = {
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

/** A Kubernetes quantity ("500m", "16Gi", "1e3") as a number. NaN when it is not one. */
export function quantity(text: string): number {
  const match = /^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$/.exec(text.trim());
  if (!match) return NaN;
  const scale = match[2] ? SUFFIX[match[2]] : 1;
  return scale === undefined ? NaN : Number(match[1]) * scale;
}
