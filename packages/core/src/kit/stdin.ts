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

/** Is this something exec can read as stdin? (JavaScript callers can pass anything.) */
export function isExecStdin(value: unknown): value is ExecStdin {
  if (typeof value === 'string' || value instanceof Uint8Array) return true;
  return value !== null && typeof value === 'object' && (Symbol.asyncIterator in value || typeof (value as { pipe?: unknown }).pipe === 'function');
}
