// Byte-level decoding: varints, fixed-width numbers, length-delimited values and skipping
// unknown fields, all bounded by the limit of the message being read. Problems are thrown as
// Malformed, which decode.ts turns into a ProtobufError naming where they happened.
import { MAX_SAFE, safe, type Scalar } from './js-values.js';
import type { ScalarType } from './schema.js';
import { EGROUP, I32, I64, LEN, SGROUP, VARINT } from './wire-format.js';

// fatal: proto3 strings must be valid UTF-8; ignoreBOM: a leading U+FEFF is content, not a marker.
const utf8Decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** A low-level decoding problem; decodeWith adds where it happened (message and field path). */
export class Malformed extends Error {}

export interface DecodeState {
  readonly buf: Uint8Array;
  pos: number;
  /** End of the message being decoded: no read may cross it. */
  limit: number;
  /** High 32 bits of the last varint read (the low 32 bits are returned). */
  hi: number;
  /** Where decoding is, innermost last; left as it was when a read fails. */
  readonly frames: string[];
}

/** Reads a length prefix and narrows the limit to it; returns the limit to restore. */
export function enter(st: DecodeState): number {
  const len = readLength(st);
  const outer = st.limit;
  st.limit = st.pos + len;
  return outer;
}

export function leave(st: DecodeState, outer: number): void {
  st.limit = outer;
}

export function readLength(st: DecodeState): number {
  const len = readVarint(st);
  const left = st.limit - st.pos;
  if (st.hi !== 0 || len > left) {
    throw new Malformed(
      `truncated: a length-delimited value of ${st.hi !== 0 ? 'over 4 GiB' : `${len} bytes`} at byte ${st.pos} but only ${left} bytes are left`,
    );
  }
  return len;
}

/** Returns the low 32 bits (unsigned) and leaves the high 32 bits in st.hi. */
export function readVarint(st: DecodeState): number {
  let lo = 0;
  let hi = 0;
  const start = st.pos;
  for (let i = 0; i < 10; i++) {
    if (st.pos >= st.limit) throw new Malformed(`truncated varint at byte ${start}`);
    const b = st.buf[st.pos++] ?? 0;
    const bits = b & 0x7f;
    if (i < 4) lo |= bits << (7 * i);
    else if (i === 4) {
      lo |= bits << 28;
      hi |= bits >>> 4;
    } else {
      // The tenth byte holds bit 63 only; anything more (continuation included) is malformed.
      if (i === 9 && b > 1) break;
      hi |= bits << (7 * i - 32);
    }
    if (b < 0x80) {
      st.hi = hi >>> 0;
      return lo >>> 0;
    }
  }
  throw new Malformed(`varint overflows 64 bits at byte ${start}`);
}

export function readFixed(st: DecodeState, size: 4 | 8): DataView {
  if (st.limit - st.pos < size) throw new Malformed(`truncated: a ${size * 8}-bit value at byte ${st.pos} but only ${st.limit - st.pos} bytes are left`);
  const view = new DataView(st.buf.buffer, st.buf.byteOffset + st.pos, size);
  st.pos += size;
  return view;
}

/** A view of the next length-delimited value (callers copy it before handing it out). */
export function readBytes(st: DecodeState): Uint8Array {
  const len = readLength(st);
  const bytes = st.buf.subarray(st.pos, st.pos + len);
  st.pos += len;
  return bytes;
}

function int64(lo: number, hi: number, signed: boolean): number | bigint {
  if (!signed || hi < 0x80000000) {
    // Below 2^53 the number is exact; beyond it only a bigint is.
    return hi < 0x200000 ? hi * 0x100000000 + lo : (BigInt(hi) << 32n) | BigInt(lo);
  }
  const v = BigInt.asIntN(64, (BigInt(hi) << 32n) | BigInt(lo));
  return v >= -MAX_SAFE ? Number(v) : v;
}

export function readScalar(st: DecodeState, type: ScalarType): Scalar {
  switch (type) {
    case 'int32':
      return readVarint(st) | 0; // the low 32 bits of the sign-extended value
    case 'uint32':
      return readVarint(st);
    case 'sint32': {
      const n = readVarint(st);
      return (n >>> 1) ^ -(n & 1);
    }
    case 'int64':
    case 'uint64': {
      const lo = readVarint(st);
      return int64(lo, st.hi, type === 'int64');
    }
    case 'sint64': {
      const lo = readVarint(st);
      const n = (BigInt(st.hi) << 32n) | BigInt(lo);
      return safe((n >> 1n) ^ -(n & 1n));
    }
    case 'bool': {
      const lo = readVarint(st);
      return lo !== 0 || st.hi !== 0;
    }
    case 'fixed32':
      return readFixed(st, 4).getUint32(0, true);
    case 'sfixed32':
      return readFixed(st, 4).getInt32(0, true);
    case 'float':
      return readFixed(st, 4).getFloat32(0, true);
    case 'fixed64':
      return safe(readFixed(st, 8).getBigUint64(0, true));
    case 'sfixed64':
      return safe(readFixed(st, 8).getBigInt64(0, true));
    case 'double':
      return readFixed(st, 8).getFloat64(0, true);
    case 'bytes':
      return readBytes(st).slice();
    case 'string': {
      const bytes = readBytes(st);
      try {
        return utf8Decoder.decode(bytes);
      } catch {
        throw new Malformed('invalid UTF-8 in a string');
      }
    }
  }
}

export function skipField(st: DecodeState, number: number, wireType: number): void {
  switch (wireType) {
    case VARINT:
      readVarint(st);
      return;
    case I64:
      readFixed(st, 8);
      return;
    case LEN:
      readBytes(st);
      return;
    case I32:
      readFixed(st, 4);
      return;
    case SGROUP:
      // Groups (proto2) nest until the end-group tag with the same number.
      for (;;) {
        if (st.pos >= st.limit) throw new Malformed(`truncated: group ${number} has no end`);
        const tag = readVarint(st);
        if (st.hi !== 0 || tag >>> 3 === 0) throw new Malformed(`invalid tag inside group ${number}`);
        if ((tag & 7) === EGROUP) {
          if (tag >>> 3 !== number) throw new Malformed(`group ${number} closed by end-group ${tag >>> 3}`);
          return;
        }
        skipField(st, tag >>> 3, tag & 7);
      }
    case EGROUP:
      throw new Malformed(`unexpected end-group tag for field ${number}`);
    default:
      throw new Malformed(`invalid wire type ${wireType} for field ${number}`);
  }
}
