import { stat } from 'node:fs/promises';

/** What is at a path on the host: a file, a directory, or nothing (ENOENT, ENOTDIR); other errors go on. */
export async function kindOf(path: string): Promise<'file' | 'dir' | undefined> {
  try {
    const st = await stat(path);
    return st.isDirectory() ? 'dir' : st.isFile() ? 'file' : undefined;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ENOTDIR') return undefined;
    throw error;
  }
}
