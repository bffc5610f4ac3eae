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

/** Keep the tasks whose id matches any of the globs (all of them when there are none). */
export function filterTasks<T extends { id: string }>(tasks: readonly T[], globs: readonly string[]): T[] {
  if (globs.length === 0) return [...tasks];
  const patterns = globs.map(globToRegExp);
  return tasks.filter((task) => patterns.some((p) => p.test(task.id)));
}
