import { hostname } from 'node:os';
import type { SweepOptions, SweepReport } from '../contract.js';
import { LABEL_CREATED, LABEL_OWNER_HOST, LABEL_OWNER_PID } from '../labels.js';

/** Is a process of this host alive? (EPERM: it exists, under another user.) */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface OrphanQuery {
  /** A resource older than this is an orphan wherever its owner runs. */
  olderThanMs?: number;
  /** When the backend's own record says it was created, if the label is missing (ms since epoch). */
  createdAtMs?: number;
  now?: number;
  /** This host's name; default os.hostname(). */
  host?: string;
}

/**
 * The sweep rule, the same on every backend: on the owner's host its liveness is known, so a dead
 * owner's resources are orphans. From another host it is not, and only age (olderThanMs) can say
 * a resource was abandoned.
 */
export function isOrphan(labels: Readonly<Record<string, string | undefined>>, query: OrphanQuery = {}): boolean {
  const pid = Number(labels[LABEL_OWNER_PID]);
  const created = Number(labels[LABEL_CREATED]) || query.createdAtMs || 0;
  const now = query.now ?? Date.now();
  const sameHost = labels[LABEL_OWNER_HOST] === (query.host ?? hostname()) && Number.isInteger(pid) && pid > 0;
  const oldEnough = query.olderThanMs !== undefined && now - created >= query.olderThanMs;
  return sameHost ? !processAlive(pid) || oldEnough : oldEnough;
}

/** One resource a sweep found to be an orphan. */
export interface SweepTarget {
  /** How the report names it (`removed`, `wouldRemove`). */
  name: string;
  /** How a failure names it, when not by `name` (e.g. Docker's container id). */
  id?: string;
  remove: () => Promise<unknown>;
  /** The message for a failed removal, or undefined when the resource was already gone (not a failure). */
  failure: (error: unknown) => string | undefined;
}

/**
 * One `Backend.sweep()`'s bookkeeping, the same on every backend: the sweep rule with the caller's
 * olderThanMs, and each orphan removed, or in a dry run only listed, with the report to return.
 * The backend lists its resources (by LABEL_MANAGED, and LABEL_SESSION when asked) and calls these.
 */
export class Sweep {
  readonly report: SweepReport;
  readonly #olderThanMs: number | undefined;
  readonly #dryRun: boolean;
  /** Only this owner's resources (ownedByThisProcess, ownedBy), alive or not. */
  readonly #owner: { pid: number; host: string } | undefined;

  constructor(backend: string, opts: SweepOptions = {}) {
    this.#olderThanMs = opts.olderThanMs;
    this.#owner = opts.ownedBy ?? (opts.ownedByThisProcess === true ? { pid: process.pid, host: hostname() } : undefined);
    this.#dryRun = opts.dryRun === true;
    this.report = { backend, removed: [], failed: [], ...(this.#dryRun ? { dryRun: true, wouldRemove: [] } : {}) };
  }

  /** The sweep rule (isOrphan); `createdAtMs` is the backend's own record, used if the label is missing. */
  isOrphan(labels: Readonly<Record<string, string | undefined>>, createdAtMs?: number): boolean {
    if (this.#owner) return labels[LABEL_OWNER_PID] === String(this.#owner.pid) && labels[LABEL_OWNER_HOST] === this.#owner.host;
    return isOrphan(labels, {
      ...(this.#olderThanMs !== undefined ? { olderThanMs: this.#olderThanMs } : {}),
      ...(createdAtMs ? { createdAtMs } : {}),
    });
  }

  /** Remove an orphan (a dry run only lists it); a failure is reported, never thrown. */
  async remove(target: SweepTarget): Promise<void> {
    if (this.#dryRun) {
      this.report.wouldRemove!.push(target.name);
      return;
    }
    try {
      await target.remove();
      this.report.removed.push(target.name);
    } catch (error) {
      const message = target.failure(error);
      if (message !== undefined) this.report.failed.push({ id: target.id ?? target.name, message });
    }
  }
}
