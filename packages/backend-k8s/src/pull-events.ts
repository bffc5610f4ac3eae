// What the kubelet's events say about a failed pull: its own words, and whether it had berth's pull Secret.

type PodEvent = { reason?: string; message?: string; count?: number };

/**
 * The kubelet could not read a pull Secret berth made for this pod, so it pulled without it. The
 * Secret exists (it is made before the pod and kept until the pod is gone): the kubelet's cache of
 * a newly named Secret may take longer than its one-second wait to fill on a busy node. Its next
 * pull (after a back-off of about 10 s) reads it; failing now would end the task on a credential
 * that is fine.
 */
export function secretUnread(events: readonly PodEvent[], ours: readonly string[]): boolean {
  return events.some((e) => e.reason === 'FailedToRetrieveImagePullSecret' && ours.some((name) => e.message?.includes(name)));
}

/** secretUnread at every failed pull (the kubelet reports each under one event, counted). */
export function everyPullWithoutSecret(events: readonly PodEvent[], ours: readonly string[]): boolean {
  const count = (match: (e: { reason?: string; message?: string }) => boolean) => events.filter(match).reduce((n, e) => n + (e.count ?? 1), 0);
  const unread = count((e) => e.reason === 'FailedToRetrieveImagePullSecret' && ours.some((name) => e.message?.includes(name)));
  return unread > 0 && unread >= count((e) => e.reason === 'Failed' && /failed to pull/i.test(e.message ?? ''));
}

/** The kubelet's own words for a failed pull: "Failed to pull image ...: <the registry's words>", not "Error: ErrImagePull". */
export function pullMessage(events: readonly PodEvent[], fallback: string): string {
  const failed = events
    .filter((e) => e.reason === 'Failed')
    .map((e) => e.message ?? '')
    .filter((m) => m.length > 0);
  return failed.filter((m) => /failed to pull/i.test(m)).at(-1) ?? failed.at(-1) ?? fallback;
}
