import { ConfigError } from '../errors.js';
import type { BerthErrorOptions } from '../errors.js';

/**
 * What decides a run's results besides its tasks, by name: the agent, the backend and where it
 * runs, settings that change what a trial does. A resume whose identity differs is refused, so a
 * journal never mixes results of two runs. The values are shown when a resume is refused: keep
 * secrets out of them (hash them).
 */
export type RunIdentity = Readonly<Record<string, string>>;

/** The parts of a journal's header that must match for a resume. */
export interface JournalIdentity {
  taskIds: readonly string[];
  maxAttempts: number;
  scoreField: string;
  identity?: RunIdentity;
}

function listSome(ids: readonly string[], max = 5): string {
  const shown = ids.slice(0, max).join(', ');
  return ids.length > max ? `${shown}, ... (${ids.length} in all)` : shown;
}

/** What differs between the run a journal was written for and this one, in words; empty when none. */
export function identityChanges(there: JournalIdentity, here: JournalIdentity): string[] {
  const changes: string[] = [];
  const before = new Set(there.taskIds);
  const after = new Set(here.taskIds);
  const added = here.taskIds.filter((id) => !before.has(id));
  const removed = there.taskIds.filter((id) => !after.has(id));
  if (added.length > 0 || removed.length > 0) {
    const parts = [`${there.taskIds.length} tasks there, ${here.taskIds.length} here`];
    if (added.length > 0) parts.push(`new: ${listSome(added)}`);
    if (removed.length > 0) parts.push(`gone: ${listSome(removed)}`);
    changes.push(`tasks (${parts.join('; ')})`);
  }
  if (there.maxAttempts !== here.maxAttempts) changes.push(`maxAttempts (${there.maxAttempts} there, ${here.maxAttempts} here)`);
  if (there.scoreField !== here.scoreField) changes.push(`scoreField ("${there.scoreField}" there, "${here.scoreField}" here)`);
  const a = there.identity ?? {};
  const b = here.identity ?? {};
  for (const key of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
    if (a[key] === b[key]) continue;
    const show = (v: string | undefined) => (v === undefined ? 'not set' : JSON.stringify(v));
    changes.push(`${key} (${show(a[key])} there, ${show(b[key])} here)`);
  }
  return changes;
}

/**
 * A resume refused: the journal was written for a run that differs from this one. `changes` says
 * what differs, each as `<what> (<there> there, <here> here)`, so a tool can say it in its own words.
 */
export class RunMismatchError extends ConfigError {
  readonly changes: readonly string[];
  /** The journal (or job directory) that holds the other run. */
  readonly location: string;
  constructor(options: BerthErrorOptions & { changes: readonly string[]; location: string; path?: string }) {
    super(options);
    this.changes = options.changes;
    this.location = options.location;
  }
  protected override details(): Record<string, string> {
    return { ...(this.path === undefined ? {} : { path: this.path }), changes: this.changes.join('; '), location: this.location };
  }
}
