// How protobuf values are held in JS, and the helpers encode.ts, decode.ts and the wire
// reader share for checking them and describing them in error messages.

/** A scalar field's value once checked (encoding) or read (decoding). */
export type Scalar = number | bigint | boolean | string | Uint8Array;

export const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** A bigint as a number when that is exact (within ±2^53), else as is. */
export function safe(v: bigint): number | bigint {
  return v >= -MAX_SAFE && v <= MAX_SAFE ? Number(v) : v;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);
}

/** A short description of a value for error messages (strings are cut at 40 characters). */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (value instanceof Uint8Array) return 'a Uint8Array';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return `${typeof value} ${String(value)}`;
  return typeof value;
}
