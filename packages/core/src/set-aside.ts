import { existsSync, renameSync } from 'node:fs';

/**
 * Moves a file or directory to `<path>.replaced-<time>`, so starting over never deletes the
 * earlier run's results; returns where it went (undefined when there was nothing there).
 */
export function setAside(path: string, now: number = Date.now()): string | undefined {
  if (!existsSync(path)) return undefined;
  const aside = `${path}.replaced-${new Date(now).toISOString().replace(/[:.]/g, '-')}`;
  renameSync(path, aside);
  return aside;
}
