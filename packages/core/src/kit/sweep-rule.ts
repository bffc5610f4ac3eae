import { hostname } from 'node:os';
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
