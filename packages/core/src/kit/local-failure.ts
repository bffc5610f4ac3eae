import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { dirname } from 'node:path';

const LOCAL_CODES = new Set(['ENOENT', 'ENOTDIR', 'EACCES', 'EISDIR', 'ENOSPC', 'EROFS', 'EEXIST', 'EPERM']);

/** A failure of the local filesystem (not a socket to the backend that happens to share the code). */
export function isLocalIo(error: unknown): error is NodeJS.ErrnoException {
  const e = error as { code?: unknown; syscall?: unknown; statusCode?: unknown } | undefined;
  return typeof e?.code === 'string' && LOCAL_CODES.has(e.code) && e.syscall !== 'connect' && e.statusCode === undefined;
}

/**
 * Why a local path could not be written, in words: the error names the first missing component
 * (ENOENT from mkdir), while the cause is further up: a parent that is a file, a read-only
 * filesystem, a directory the process may not write in.
 */
export async function localFailureMessage(error: NodeJS.ErrnoException, direction: 'upload' | 'download'): Promise<string> {
  const path = typeof error.path === 'string' ? error.path : undefined;
  if (!path) return error.message;
  if (direction === 'upload') return error.code === 'ENOENT' ? `${path} does not exist` : error.message;
  for (let probe = path; ; probe = dirname(probe)) {
    try {
      const st = await stat(probe);
      if (!st.isDirectory()) return `${probe} is a file, not a directory: pick a local path whose parents are directories`;
      await access(probe, constants.W_OK);
      return error.message;
    } catch (failure) {
      const code = (failure as NodeJS.ErrnoException).code;
      if (code === 'EROFS') return `${probe} is on a read-only file system: pick a writable local path (${error.code})`;
      if (code === 'EACCES') return `this process may not write in ${probe}: pick a local path it may write to (${error.code})`;
      if ((code !== 'ENOENT' && code !== 'ENOTDIR') || dirname(probe) === probe) return error.message;
    }
  }
}
