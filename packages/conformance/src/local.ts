// Local filesystem helpers: random content, streaming hashes, tree snapshots.
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { chmod, lstat, mkdir, readdir, readlink, symlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { once } from 'node:events';
import { finished, pipeline } from 'node:stream/promises';

export type DigestAlgorithm = 'sha256' | 'md5';

/** Write `size` random bytes in 1 MiB chunks (memory stays flat); returns their digest. */
export async function writeRandomFile(path: string, size: number, algorithm: DigestAlgorithm = 'sha256'): Promise<string> {
  await mkdir(dirname(path), { recursive: true });
  const hash = createHash(algorithm);
  const out = createWriteStream(path);
  const chunk = 1024 * 1024;
  for (let written = 0; written < size; ) {
    const n = Math.min(chunk, size - written);
    const buf = randomBytes(n);
    hash.update(buf);
    if (!out.write(buf)) await once(out, 'drain');
    written += n;
  }
  out.end();
  await finished(out);
  return hash.digest('hex');
}

/** Stream-hash a file. */
export async function digestFile(path: string, algorithm: DigestAlgorithm = 'sha256'): Promise<string> {
  const hash = createHash(algorithm);
  await pipeline(createReadStream(path, { highWaterMark: 1024 * 1024 }), hash);
  return hash.digest('hex');
}

export async function writeFileWithMode(path: string, content: string | Uint8Array, mode: number): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, content);
  await chmod(path, mode);
}

export async function makeSymlink(target: string, path: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await symlink(target, path);
}

export type TreeEntry =
  | { type: 'file'; mode: number; size: number; sha256: string }
  | { type: 'dir' }
  | { type: 'symlink'; target: string }
  | { type: 'other' };

/** Every entry under `root` by relative POSIX path, sorted; files with mode (permission bits) and hash. */
export async function snapshotTree(root: string): Promise<Map<string, TreeEntry>> {
  const out = new Map<string, TreeEntry>();
  async function walk(dir: string, rel: string): Promise<void> {
    const names = (await readdir(dir)).sort();
    for (const name of names) {
      const path = join(dir, name);
      const childRel = rel ? `${rel}/${name}` : name;
      const st = await lstat(path);
      if (st.isSymbolicLink()) out.set(childRel, { type: 'symlink', target: await readlink(path) });
      else if (st.isDirectory()) {
        out.set(childRel, { type: 'dir' });
        await walk(path, childRel);
      } else if (st.isFile()) {
        out.set(childRel, { type: 'file', mode: st.mode & 0o777, size: st.size, sha256: await digestFile(path) });
      } else out.set(childRel, { type: 'other' });
    }
  }
  await walk(root, '');
  return new Map([...out.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

export async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch {
    return false;
  }
}
