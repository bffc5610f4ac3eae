import { isAbsolute, relative } from 'node:path';

/** Files smaller than this are read or written whole; larger ones are streamed. */
export const SMALL_FILE = 256 * 1024;

/** Is `target` the directory `root` or somewhere beneath it? (Both absolute, already resolved.) */
export function isInside(root: string, target: string): boolean {
  const rel = relative(root, target);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}
