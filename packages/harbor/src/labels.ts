import { createHash } from 'node:crypto';

export const LABEL_TASK = 'berth.task';

const MAX = 63;
const SAFE = /^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$/;

/**
 * A task id as a label value. Kubernetes allows at most 63 characters of [A-Za-z0-9._-], starting
 * and ending alphanumeric (berth's spec enforces the length for every backend), while task ids are
 * directory names and may be long or contain anything. A safe id is used as is; any other is
 * cleaned and suffixed with a short hash of the original, so two different ids never share a label.
 */
export function taskLabelValue(id: string): string {
  if (SAFE.test(id)) return id;
  const hash = createHash('sha256').update(id).digest('hex').slice(0, 8);
  const cleaned = id
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^[^A-Za-z0-9]+/, '')
    .slice(0, MAX - hash.length - 1)
    .replace(/[^A-Za-z0-9]+$/, '');
  return cleaned ? `${cleaned}-${hash}` : `task-${hash}`;
}
