import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, readdir, readlink } from 'node:fs/promises';
import { join } from 'node:path';

async function addFile(hash: Hash, path: string): Promise<void> {
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
}

async function walk(hash: Hash, root: string, rel: string): Promise<void> {
  const entries = (await readdir(join(root, rel), { withFileTypes: true })).map((e) => e.name).sort();
  for (const name of entries) {
    const path = join(rel, name);
    const full = join(root, path);
    const st = await lstat(full);
    // Names, kinds and the executable bit decide what runs (a script that is not +x runs differently).
    if (st.isDirectory()) {
      hash.update(`d ${path}\0`);
      await walk(hash, root, path);
    } else if (st.isSymbolicLink()) {
      hash.update(`l ${path}\0${await readlink(full)}\0`);
    } else if (st.isFile()) {
      hash.update(`f ${path} ${st.mode & 0o111 ? 'x' : '-'} ${st.size}\0`);
      await addFile(hash, full);
    }
  }
}

/**
 * A task's version: sha256 over every file of its directory (relative names, kinds, executable
 * bits, contents, symlink targets), so a resumed job reruns a task whose task.toml, tests,
 * solution or environment changed, and never reuses a result earned by other content.
 * `${VAR}` values from the host are not part of it (they may be secrets).
 */
export async function taskContentHash(taskDir: string): Promise<string> {
  const hash = createHash('sha256');
  await walk(hash, taskDir, '');
  return `sha256:${hash.digest('hex')}`;
}
