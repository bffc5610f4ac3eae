// Byte-level encoding: a growable buffer with varints, fixed-width numbers and length-delimited
// values, and the tagless encoding of each scalar type (zigzag for sint, UTF-8 for strings).
import type { Scalar } from './js-values.js';
import type { ScalarType } from './schema.js';

const utf8Encoder = new TextEncoder();

export class Writer {
  #buf = new Uint8Array(256);
  #len = 0;
  readonly #scratch = new DataView(new ArrayBuffer(8));

  #reserve(n: number): void {
    if (this.#len + n <= this.#buf.length) return;
    const next = new Uint8Array(Math.max(this.#buf.length * 2, this.#len + n));
    next.set(this.#buf.subarray(0, this.#len));
    this.#buf = next;
  }

  /** An unsigned varint of at most 32 bits. */
  varint32(n: number): void {
    this.#reserve(5);
    let v = n >>> 0;
    while (v > 0x7f) {
      this.#buf[this.#len++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    this.#buf[this.#len++] = v;
  }

  /** An unsigned varint of 64 bits (negative int32/int64 arrive here as their two's complement). */
  varint64(n: bigint): void {
    if (n <= 0xffffffffn) return this.varint32(Number(n));
    this.#reserve(10);
    let v = n;
    while (v > 0x7fn) {
      this.#buf[this.#len++] = Number(v & 0x7fn) | 0x80;
      v >>= 7n;
    }
    this.#buf[this.#len++] = Number(v);
  }

  tag(field: number, wireType: number): void {
    this.varint32(((field << 3) | wireType) >>> 0);
  }

  raw(bytes: Uint8Array): void {
    this.#reserve(bytes.length);
    this.#buf.set(bytes, this.#len);
    this.#len += bytes.length;
  }

  lengthDelimited(bytes: Uint8Array): void {
    this.varint32(bytes.length);
    this.raw(bytes);
  }

  fixed32(n: number): void {
    this.#scratch.setUint32(0, n >>> 0, true);
    this.raw(new Uint8Array(this.#scratch.buffer, 0, 4));
  }

  fixed64(n: bigint): void {
    this.#scratch.setBigUint64(0, BigInt.asUintN(64, n), true);
    this.raw(new Uint8Array(this.#scratch.buffer, 0, 8));
  }

  float(n: number): void {
    this.#scratch.setFloat32(0, n, true);
    this.raw(new Uint8Array(this.#scratch.buffer, 0, 4));
  }

  double(n: number): void {
    this.#scratch.setFloat64(0, n, true);
    this.raw(new Uint8Array(this.#scratch.buffer, 0, 8));
  }

  finish(): Uint8Array {
    return this.#buf.slice(0, this.#len);
  }
}

/** Negative int32/int64 (and enums) are sign-extended to 64 bits: ten bytes, as protobuf requires. */
export function writeVarint(w: Writer, v: number | bigint): void {
  if (typeof v === 'number' && v >= 0 && v <= 0xffffffff) w.varint32(v);
  else w.varint64(BigInt.asUintN(64, BigInt(v)));
}

/** Writes a checked scalar without its tag (also the element format of packed lists). */
export function writeScalarData(w: Writer, type: ScalarType, v: Scalar): void {
  switch (type) {
    case 'int32':
    case 'int64':
    case 'uint32':
    case 'uint64':
      return writeVarint(w, v as number | bigint);
    case 'sint32':
      return w.varint32((((v as number) << 1) ^ ((v as number) >> 31)) >>> 0);
    case 'sint64': {
      const n = v as bigint;
      return w.varint64(BigInt.asUintN(64, (n << 1n) ^ (n >> 63n)));
    }
    case 'fixed32':
    case 'sfixed32':
      return w.fixed32(v as number);
    case 'fixed64':
    case 'sfixed64':
      return w.fixed64(v as bigint);
    case 'float':
      return w.float(v as number);
    case 'double':
      return w.double(v as number);
    case 'bool':
      return w.varint32(v ? 1 : 0);
    case 'string':
      return w.lengthDelimited(utf8Encoder.encode(v as string));
    case 'bytes':
      return w.lengthDelimited(v as Uint8Array);
  }
}
