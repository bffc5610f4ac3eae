import { setAside } from '@berth/core';

/**
 * Moves a job directory aside to `<jobDir>.replaced-<time>` so a job can start over without
 * losing the earlier one's results; returns where it went (undefined when there was none).
 */
export async function setJobAside(jobDir: string, now = new Date()): Promise<string | undefined> {
  return setAside(jobDir, now.getTime());
}
