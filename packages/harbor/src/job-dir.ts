import { rename, stat } from 'node:fs/promises';

/**
 * Moves a job directory aside to `<jobDir>.replaced-<time>` so a job can start over without
 * losing the earlier one's results; returns where it went (undefined when there was none).
 */
export async function setJobAside(jobDir: string, now = new Date()): Promise<string | undefined> {
  try {
    await stat(jobDir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const aside = `${jobDir}.replaced-${now.toISOString().replace(/[:.]/g, '-')}`;
  await rename(jobDir, aside);
  return aside;
}
