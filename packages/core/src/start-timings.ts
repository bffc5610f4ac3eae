/**
 * When a sandbox's start reached each of its marks (Environment.startTimings). The kit records
 * `requested` (start() called), `admitted` (the creation limiter let it through: the end of the
 * queue) and `firstCommand` (the first process started in the sandbox after it ran) itself; a
 * backend's transport says the marks only its engine knows (StartProgress.reached), and the kit
 * records `running` when the start resolves if the transport did not say it. In the order a start
 * usually reaches them; a backend may reach some in another order (Docker pulls before it asks for
 * the container, Kubernetes after the pod is accepted and scheduled).
 */
export const START_MARKS = ['requested', 'admitted', 'accepted', 'scheduled', 'pulled', 'running', 'network', 'firstCommand'] as const;

/**
 * - requested: start() was called.
 * - admitted: the backend's creation limiter gave it a slot (at once when nothing is queued); the
 *   startup deadline (`timeouts.startupMs`) counts from here.
 * - accepted: the engine accepted the request that makes the sandbox (a container or pod created).
 * - scheduled: placed on a node (Kubernetes).
 * - pulled: its image is there (pulled, or found present, or built).
 * - running: its main process runs.
 * - network: network 'none' proved from inside, where the backend proves it (Kubernetes).
 * - firstCommand: the first process started in it after it ran (an exec, a transfer over exec, a pool's prepare).
 */
export type StartMark = (typeof START_MARKS)[number];

export interface StartTimings {
  /** When start() was called, in ms since the epoch. */
  requestedAt: number;
  /**
   * Each mark the start reached, in ms after `requestedAt` (so `requested` is 0), measured on a
   * monotonic clock. A mark not reached (a failed start, a backend that does not report it) is
   * absent.
   */
  marks: Partial<Record<StartMark, number>>;
}

/** A phase of a start: the time from the mark reached before `phase` to `phase` itself. */
export interface StartPhase {
  /** The mark the phase ends at ('admitted' is the time queued, 'pulled' the pull...). */
  phase: Exclude<StartMark, 'requested'>;
  ms: number;
}

/**
 * A start's phases: for each mark reached after the first, the time since the mark reached just
 * before it (by time; marks reached at the same moment in START_MARKS order). Marks that are absent
 * are skipped, so the phases always add up to the last mark's offset.
 */
export function startPhases(timings: StartTimings): StartPhase[] {
  const reached = START_MARKS.filter((mark) => typeof timings.marks[mark] === 'number' && Number.isFinite(timings.marks[mark]))
    .map((mark, order) => ({ mark, at: timings.marks[mark]!, order }))

    .sort((a, b) => a.at - b.at || a.order - b.order);
  const phases: StartPhase[] = [];
  for (let i = 1; i < reached.length; i++) {
    const { mark, at } = reached[i]!;
    if (mark === 'requested') continue;
    phases.push({ phase: mark, ms: at - reached[i - 1]!.at });
  }
  return phases;
}
