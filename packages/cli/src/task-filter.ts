import { loadHarborTasks, type HarborTask } from '@berth/harbor';
import { UsageError } from './usage-error.js';

/** A shell-style glob over task ids: `*` any run of characters, `?` one, `[abc]` a class. */
export function globToRegExp(glob: string): RegExp {
  let out = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*') out += '.*';
    else if (c === '?') out += '.';
    else if (c === '[') {
      const end = glob.indexOf(']', i + 1);
      if (end === -1) out += '\\[';
      else {
        const body = glob.slice(i + 1, end).replace(/\\/g, '\\\\');
        out += `[${body.startsWith('!') ? `^${body.slice(1)}` : body}]`;
        i = end;
      }
    } else out += c.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  return new RegExp(`^${out}$`);
}

/**
 * The tasks of a dataset that --filter selects, only those read: a task berth cannot load (a
 * compose task, a helper folder) elsewhere in the dataset does not stop the selection.
 */
export async function loadSelected(tasksDir: string, globs: readonly string[]): Promise<HarborTask[]> {
  const patterns = globs.map(globToRegExp);
  const selected = globs.length === 0 ? undefined : (id: string) => patterns.some((p) => p.test(id));
  const tasks = await loadHarborTasks(tasksDir, selected ? { filter: selected } : {});
  if (tasks.length === 0) throw new UsageError(`--filter ${globs.join(' ')} matches none of the tasks in ${tasksDir}`);
  return tasks;
}
