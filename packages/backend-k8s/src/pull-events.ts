// What the kubelet's events say about a failed pull: its own words, and whether it had berth's pull Secret.

type PodEvent = { reason?: string; message?: string; count?: number };

/**
 * The pull Secrets (of `names`) the kubelet said it could not read, so it pulled without them. A
 * Secret that exists (berth's, made before the pod; or a named one just made) may still be
 * missing from the kubelet's cache: filling it for a newly named Secret can take longer than its
 * one-second wait on a busy node. Its next pull (after a back-off of about 10 s) reads it; failing
 * now would end the task on a credential that is fine.
 */
export function unreadSecrets(events: readonly PodEvent[], names: readonly string[]): string[] {
  return names.filter((name) => events.some((e) => e.reason === 'FailedToRetrieveImagePullSecret' && mentions(e.message, name)));
}

/** The kubelet lists the Secrets it missed in parentheses, comma-separated: match a whole name. */
function mentions(message: string | undefined, name: string): boolean {
  return new RegExp(`[(,\\s]${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}[),\\s]`).test(message ?? '');
}

/** Those Secrets unread at every failed pull (the kubelet reports each under one event, counted). */
export function everyPullWithoutSecret(events: readonly PodEvent[], ours: readonly string[]): boolean {
  const count = (match: (e: { reason?: string; message?: string }) => boolean) => events.filter(match).reduce((n, e) => n + (e.count ?? 1), 0);
  const unread = count((e) => e.reason === 'FailedToRetrieveImagePullSecret' && ours.some((name) => mentions(e.message, name)));
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
