import { Readable } from 'node:stream';
import type { ExecStdin } from '../contract.js';

/** The caller's stdin as a stream: strings and bytes become a one-chunk stream, streams pass through. */
export function stdinStream(stdin: ExecStdin | undefined): Readable | undefined {
  if (stdin === undefined) return undefined;
  if (typeof stdin === 'string') return Readable.from([Buffer.from(stdin)]);
  if (stdin instanceof Uint8Array) return Readable.from(stdin.length > 0 ? [stdin] : []);
  if (stdin instanceof Readable) return stdin;
  return Readable.from(stdin, { objectMode: false });
}
