// A hand-written proto3 codec for the messages in schema.ts: the backend needs a few dozen
// messages, which does not justify a protobuf runtime and code generator as dependencies.
//
// Values are plain objects keyed by proto field name (snake_case):
// - absent fields are not written; decoding leaves fields that are not on the wire absent;
// - proto3 defaults (0, '', false, empty bytes/list/map) are not written unless the field has
//   explicit presence (`optional`, oneof members, messages);
// - enums: encode from the NAME or the number, decode to the NAME (the number when unknown);
// - 64-bit integers: number or bigint in; out as number while safe, bigint beyond 2^53;
// - bytes: Uint8Array (a Buffer works) in, Uint8Array (a copy) out;
// - maps: plain objects keyed by the key as a string, entries written in insertion order (JS puts
//   integer-like keys first);
// - fields whose type fields.json names but does not define: raw bytes (or a number) both ways.
import {
  SCHEMA,
  indexSchema,
  type FieldInfo,
  type MessageInfo,
  type MessageNameOf,
  type MessageValue,
  type ResolvedType,
  type ScalarType,
  type Schema,
  type SchemaIndex,
} from './schema.js';

/** Thrown for values that cannot be encoded and bytes that cannot be decoded. */
export class ProtobufError extends Error {
  override name = 'ProtobufError';
}

export interface Codec<S extends Schema> {
  encode<N extends MessageNameOf<S>>(name: N, value: MessageValue<N, S>): Uint8Array;
  decode<N extends MessageNameOf<S>>(name: N, bytes: Uint8Array): MessageValue<N, S>;
}

/** A codec for any schema; the exported encodeMessage/decodeMessage use Modal's. */
export function createCodec<S extends Schema>(schema: S): Codec<S> {
  const index = indexSchema(schema);
  return {
    encode: (name, value) => encodeWith(index, name, value),
    decode: (name, bytes) => decodeWith(index, name, bytes) as MessageValue<typeof name, S>,
  };
}

const modal = createCodec(SCHEMA);

/** Encodes a message the way protoc does: fields in ascending number, packed repeated scalars. */
export function encodeMessage<N extends MessageNameOf<typeof SCHEMA>>(name: N, value: MessageValue<N>): Uint8Array {
  return modal.encode(name, value);
}

/** Decodes a message; unknown fields are skipped, malformed input throws a ProtobufError. */
export function decodeMessage<N extends MessageNameOf<typeof SCHEMA>>(name: N, bytes: Uint8Array): MessageValue<N> {
  return modal.decode(name, bytes);
}

// ---------------------------------------------------------------------------------------------
// Wire format

const VARINT = 0;
const I64 = 1;
const LEN = 2;
const SGROUP = 3;
const EGROUP = 4;
const I32 = 5;

function wireTypeOf(type: ScalarType): number {
  switch (type) {
    case 'double':
    case 'fixed64':
    case 'sfixed64':
      return I64;
    case 'float':
    case 'fixed32':
    case 'sfixed32':
      return I32;
    case 'string':
    case 'bytes':
      return LEN;
    default:
      return VARINT;
  }
}

/** Repeated scalar numerics and enums are packed by proto3 (and accepted either way). */
function isPackable(type: ResolvedType): boolean {
  return type.kind === 'enum' || (type.kind === 'scalar' && wireTypeOf(type.scalar) !== LEN);
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const utf8Encoder = new TextEncoder();
// fatal: proto3 strings must be valid UTF-8; ignoreBOM: a leading U+FEFF is content, not a marker.
const utf8Decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

// ---------------------------------------------------------------------------------------------
// Encoding

class Writer {
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

type Scalar = number | bigint | boolean | string | Uint8Array;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);
}

function encodeWith(index: SchemaIndex, name: string, value: unknown): Uint8Array {
  if (!index.isMessage(name)) throw new ProtobufError(`encodeMessage: ${JSON.stringify(name)} is not a known message`);
  const w = new Writer();
  writeMessage(index, w, index.message(name), value, name);
  return w.finish();
}

function fail(path: string, problem: string): never {
  throw new ProtobufError(`encodeMessage: ${path}: ${problem}`);
}

function writeMessage(index: SchemaIndex, w: Writer, info: MessageInfo, value: unknown, path: string): void {
  if (!isRecord(value)) fail(path, `expected an object for ${info.name}, got ${describe(value)}`);
  // A misspelt field would otherwise vanish silently from the request.
  for (const key of Object.keys(value)) {
    if (!info.byName.has(key) && value[key] !== undefined) fail(path, `${info.name} has no field ${JSON.stringify(key)}`);
  }
  for (const [group, members] of info.oneofs) {
    const set = members.filter((m) => value[m.name] !== undefined && value[m.name] !== null);
    if (set.length > 1) fail(path, `oneof ${group} has more than one member set (${set.map((m) => m.name).join(', ')})`);
  }
  for (const field of info.fields) {
    const v = value[field.name];
    if (v === undefined || v === null) continue;
    const at = `${path}.${field.name}`;
    if (field.type.kind === 'map') writeMap(index, w, field, field.type, v, at);
    else if (field.repeated) writeRepeated(index, w, field, v, at);
    else writeValue(index, w, field.number, field.type, v, field.explicitPresence, at);
  }
}

function writeRepeated(index: SchemaIndex, w: Writer, field: FieldInfo, value: unknown, path: string): void {
  if (!Array.isArray(value)) fail(path, `expected an array, got ${describe(value)}`);
  if (value.length === 0) return;
  const type = field.type;
  if (isPackable(type)) {
    const packed = new Writer();
    value.forEach((item: unknown, i) => {
      const at = `${path}[${i}]`;
      if (type.kind === 'enum') writeVarint(packed, enumNumber(type, item, at));
      else if (type.kind === 'scalar') writeScalarData(packed, type.scalar, checkScalar(type.scalar, item, at));
    });
    w.tag(field.number, LEN);
    w.lengthDelimited(packed.finish());
    return;
  }
  value.forEach((item: unknown, i) => {
    const at = `${path}[${i}]`;
    if (item === undefined || item === null) fail(at, 'repeated fields cannot hold null or undefined');
    writeValue(index, w, field.number, type, item, true, at);
  });
}

function writeMap(
  index: SchemaIndex,
  w: Writer,
  field: FieldInfo,
  type: Extract<ResolvedType, { kind: 'map' }>,
  value: unknown,
  path: string,
): void {
  // A Map would otherwise pass as an object with no entries and vanish.
  if (!isRecord(value) || value instanceof Map) fail(path, `expected a plain object for a map, got ${value instanceof Map ? 'a Map' : describe(value)}`);
  for (const [key, v] of Object.entries(value)) {
    const at = `${path}[${JSON.stringify(key)}]`;
    if (v === undefined || v === null) fail(at, 'map values cannot be null or undefined');
    const entry = new Writer();
    // protoc writes key and value even when they hold defaults; decoders accept either.
    writeValue(index, entry, 1, { kind: 'scalar', scalar: type.key }, mapKey(type.key, key, at), true, at);
    writeValue(index, entry, 2, type.value, v, true, at);
    w.tag(field.number, LEN);
    w.lengthDelimited(entry.finish());
  }
}

/** Map keys are object keys, so strings; turn them back into the key type. */
function mapKey(type: ScalarType, key: string, path: string): Scalar {
  if (type === 'string') return key;
  if (type === 'bool') {
    if (key === 'true' || key === 'false') return key === 'true';
    fail(path, 'bool map keys must be "true" or "false"');
  }
  if (!/^-?\d+$/.test(key)) fail(path, `map key is not an integer for ${type}`);
  const n = BigInt(key);
  return type.endsWith('64') ? safe(n) : Number(n); // checkScalar then range-checks it
}

function writeValue(
  index: SchemaIndex,
  w: Writer,
  number: number,
  type: ResolvedType,
  value: unknown,
  presence: boolean,
  path: string,
): void {
  switch (type.kind) {
    case 'scalar': {
      const v = checkScalar(type.scalar, value, path);
      if (!presence && isDefault(v)) return;
      w.tag(number, wireTypeOf(type.scalar));
      writeScalarData(w, type.scalar, v);
      return;
    }
    case 'enum': {
      const n = enumNumber(type, value, path);
      if (!presence && n === 0) return;
      w.tag(number, VARINT);
      writeVarint(w, n);
      return;
    }
    case 'message': {
      const sub = new Writer();
      writeMessage(index, sub, index.message(type.name), value, path);
      w.tag(number, LEN);
      w.lengthDelimited(sub.finish());
      return;
    }
    case 'opaque': {
      if (value instanceof Uint8Array) {
        w.tag(number, LEN);
        w.lengthDelimited(value);
      } else {
        const n = checkScalar('int32', value, `${path} (${type.name}, not in the schema: pass bytes or an enum number)`);
        if (!presence && n === 0) return;
        w.tag(number, VARINT);
        writeVarint(w, n as number);
      }
      return;
    }
    case 'map':
      fail(path, 'maps cannot be nested');
  }
}

function isDefault(v: Scalar): boolean {
  if (typeof v === 'number') return v === 0 && !Object.is(v, -0); // -0.0 is written, as protoc does
  if (typeof v === 'bigint') return v === 0n;
  if (typeof v === 'boolean') return !v;
  return v.length === 0;
}

function enumNumber(type: Extract<ResolvedType, { kind: 'enum' }>, value: unknown, path: string): number {
  if (typeof value === 'string') {
    const n = type.numbers.get(value);
    if (n === undefined) fail(path, `${JSON.stringify(value)} is not a value of enum ${type.name}`);
    return n;
  }
  if (typeof value === 'number' && Number.isInteger(value) && value >= -0x80000000 && value <= 0x7fffffff) return value;
  return fail(path, `expected a name or int32 number of enum ${type.name}, got ${describe(value)}`);
}

const INT_RANGES: Partial<Record<ScalarType, readonly [bigint, bigint]>> = {
  int32: [-(2n ** 31n), 2n ** 31n - 1n],
  sint32: [-(2n ** 31n), 2n ** 31n - 1n],
  sfixed32: [-(2n ** 31n), 2n ** 31n - 1n],
  uint32: [0n, 2n ** 32n - 1n],
  fixed32: [0n, 2n ** 32n - 1n],
  int64: [-(2n ** 63n), 2n ** 63n - 1n],
  sint64: [-(2n ** 63n), 2n ** 63n - 1n],
  sfixed64: [-(2n ** 63n), 2n ** 63n - 1n],
  uint64: [0n, 2n ** 64n - 1n],
  fixed64: [0n, 2n ** 64n - 1n],
};

/** Checks a JS value fits the scalar type; 64-bit values come back as bigint, the rest as is. */
function checkScalar(type: ScalarType, value: unknown, path: string): Scalar {
  const range = INT_RANGES[type];
  if (range) {
    const wide = type.endsWith('64');
    const ok = typeof value === 'number' ? Number.isInteger(value) : wide && typeof value === 'bigint';
    if (!ok) fail(path, `expected an integer${wide ? ' (number or bigint)' : ''} for ${type}, got ${describe(value)}`);
    const big = BigInt(value as number | bigint);
    if (big < range[0] || big > range[1]) fail(path, `${String(value)} is out of range for ${type}`);
    return wide ? big : (value as number);
  }
  switch (type) {
    case 'float':
    case 'double':
      if (typeof value === 'number') return value;
      break;
    case 'bool':
      if (typeof value === 'boolean') return value;
      break;
    case 'string':
      if (typeof value === 'string') return value;
      break;
    case 'bytes':
      if (value instanceof Uint8Array) return value;
      break;
  }
  return fail(path, `expected ${type === 'bytes' ? 'a Uint8Array' : `a ${type}`}, got ${describe(value)}`);
}

/** Negative int32/int64 (and enums) are sign-extended to 64 bits: ten bytes, as protobuf requires. */
function writeVarint(w: Writer, v: number | bigint): void {
  if (typeof v === 'number' && v >= 0 && v <= 0xffffffff) w.varint32(v);
  else w.varint64(BigInt.asUintN(64, BigInt(v)));
}

/** Writes a checked scalar without its tag (also the element format of packed lists). */
function writeScalarData(w: Writer, type: ScalarType, v: Scalar): void {
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

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (value instanceof Uint8Array) return 'a Uint8Array';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return `${typeof value} ${String(value)}`;
  return typeof value;
}

// ---------------------------------------------------------------------------------------------
// Decoding

/** A low-level decoding problem; decodeWith adds where it happened (message and field path). */
class Malformed extends Error {}

interface DecodeState {
  readonly buf: Uint8Array;
  pos: number;
  /** End of the message being decoded: no read may cross it. */
  limit: number;
  /** High 32 bits of the last varint read (the low 32 bits are returned). */
  hi: number;
  /** Where decoding is, innermost last; left as it was when a read fails. */
  readonly frames: string[];
}

function decodeWith(index: SchemaIndex, name: string, bytes: Uint8Array): Record<string, unknown> {
  if (!index.isMessage(name)) throw new ProtobufError(`decodeMessage: ${JSON.stringify(name)} is not a known message`);
  if (!(bytes instanceof Uint8Array)) throw new ProtobufError(`decodeMessage(${name}): expected a Uint8Array, got ${describe(bytes)}`);
  // A plain view, so slices copy even when handed a Buffer (whose slice() shares memory).
  const buf = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const st: DecodeState = { buf, pos: 0, limit: buf.length, hi: 0, frames: [] };
  const out: Record<string, unknown> = {};
  try {
    readMessage(index, st, index.message(name), out);
  } catch (error) {
    if (!(error instanceof Malformed)) throw error;
    const where = st.frames.length > 0 ? ` in ${st.frames.join(' > ')}` : '';
    throw new ProtobufError(`decodeMessage(${name}): ${error.message}${where}`, { cause: error });
  }
  return out;
}

function readMessage(index: SchemaIndex, st: DecodeState, info: MessageInfo, out: Record<string, unknown>): void {
  while (st.pos < st.limit) {
    const start = st.pos;
    const tag = readVarint(st);
    if (st.hi !== 0 || tag >>> 3 === 0) throw new Malformed(`invalid tag at byte ${start} of ${info.name}`);
    const number = tag >>> 3;
    const wireType = tag & 7;
    const field = info.byNumber.get(number);
    if (field === undefined) {
      st.frames.push(`${info.name} unknown field ${number}`);
      skipField(st, number, wireType);
    } else {
      st.frames.push(`${info.name}.${field.name} (field ${number})`);
      readField(index, st, info, field, wireType, out);
    }
    st.frames.pop();
  }
}

function readField(
  index: SchemaIndex,
  st: DecodeState,
  info: MessageInfo,
  field: FieldInfo,
  wireType: number,
  out: Record<string, unknown>,
): void {
  const type = field.type;
  if (type.kind === 'map') {
    if (wireType !== LEN) return skipField(st, field.number, wireType);
    const map = isRecord(out[field.name]) ? (out[field.name] as Record<string, unknown>) : {};
    out[field.name] = map;
    return readMapEntry(index, st, type, map);
  }
  if (field.repeated) {
    const list = Array.isArray(out[field.name]) ? (out[field.name] as unknown[]) : [];
    if (isPackable(type) && wireType === LEN) {
      const end = enter(st);
      while (st.pos < st.limit) list.push(readValue(index, st, type, undefined));
      leave(st, end);
    } else if (accepts(type, wireType)) {
      list.push(readValue(index, st, type, undefined, wireType));
    } else {
      return skipField(st, field.number, wireType); // wrong wire type: protobuf treats it as unknown
    }
    if (list.length > 0) out[field.name] = list; // an empty packed run is no value
    return;
  }
  if (!accepts(type, wireType)) return skipField(st, field.number, wireType);
  // Setting one member of a oneof clears the others; the last one on the wire wins.
  if (field.oneof !== undefined) {
    for (const member of info.oneofs.get(field.oneof) ?? []) if (member !== field) delete out[member.name];
  }
  // A message that appears twice is merged, so decode into what is already there.
  out[field.name] = readValue(index, st, type, out[field.name], wireType);
}

function accepts(type: ResolvedType, wireType: number): boolean {
  switch (type.kind) {
    case 'scalar':
      return wireTypeOf(type.scalar) === wireType;
    case 'enum':
      return wireType === VARINT;
    case 'message':
      return wireType === LEN;
    case 'opaque':
      return wireType === LEN || wireType === VARINT;
    case 'map':
      return false;
  }
}

/** Reads one value of a field whose wire type was checked (packed elements have no tag). */
function readValue(index: SchemaIndex, st: DecodeState, type: ResolvedType, existing: unknown, wireType?: number): unknown {
  switch (type.kind) {
    case 'scalar':
      return readScalar(st, type.scalar);
    case 'enum': {
      const n = readVarint(st) | 0;
      return type.names.get(n) ?? n;
    }
    case 'message': {
      const target = isRecord(existing) ? existing : {};
      const end = enter(st);
      readMessage(index, st, index.message(type.name), target);
      leave(st, end);
      return target;
    }
    case 'opaque':
      return wireType === VARINT ? readVarint(st) | 0 : readBytes(st).slice();
    case 'map':
      throw new Malformed('maps cannot be nested');
  }
}

function readMapEntry(
  index: SchemaIndex,
  st: DecodeState,
  type: Extract<ResolvedType, { kind: 'map' }>,
  map: Record<string, unknown>,
): void {
  const end = enter(st);
  const keyType: ResolvedType = { kind: 'scalar', scalar: type.key };
  let key: unknown;
  let value: unknown;
  while (st.pos < st.limit) {
    const start = st.pos;
    const tag = readVarint(st);
    if (st.hi !== 0 || tag >>> 3 === 0) throw new Malformed(`invalid tag at byte ${start} of a map entry`);
    const number = tag >>> 3;
    const wireType = tag & 7;
    if (number === 1 && accepts(keyType, wireType)) key = readScalar(st, type.key);
    else if (number === 2 && accepts(type.value, wireType)) value = readValue(index, st, type.value, value, wireType);
    else skipField(st, number, wireType);
  }
  leave(st, end);
  // A missing key or value means its default.
  const k = key === undefined ? defaultScalar(type.key) : key;
  if (value === undefined) value = type.value.kind === 'scalar' ? defaultScalar(type.value.scalar) : defaultOf(type.value);
  // defineProperty: a key like "__proto__" must become an own entry, not change the prototype.
  Object.defineProperty(map, String(k), { value, enumerable: true, writable: true, configurable: true });
}

function defaultOf(type: ResolvedType): unknown {
  switch (type.kind) {
    case 'enum':
      return type.names.get(0) ?? 0;
    case 'message':
      return {};
    case 'opaque':
      return new Uint8Array(0);
    default:
      return undefined;
  }
}

function defaultScalar(type: ScalarType): Scalar {
  switch (type) {
    case 'bool':
      return false;
    case 'string':
      return '';
    case 'bytes':
      return new Uint8Array(0);
    default:
      return 0;
  }
}

/** Reads a length prefix and narrows the limit to it; returns the limit to restore. */
function enter(st: DecodeState): number {
  const len = readLength(st);
  const outer = st.limit;
  st.limit = st.pos + len;
  return outer;
}

function leave(st: DecodeState, outer: number): void {
  st.limit = outer;
}

function readLength(st: DecodeState): number {
  const len = readVarint(st);
  const left = st.limit - st.pos;
  if (st.hi !== 0 || len > left) {
    throw new Malformed(`truncated: a length-delimited value of ${st.hi !== 0 ? 'over 4 GiB' : `${len} bytes`} at byte ${st.pos} but only ${left} bytes are left`);
  }
  return len;
}

/** Returns the low 32 bits (unsigned) and leaves the high 32 bits in st.hi. */
function readVarint(st: DecodeState): number {
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

function readFixed(st: DecodeState, size: 4 | 8): DataView {
  if (st.limit - st.pos < size) throw new Malformed(`truncated: a ${size * 8}-bit value at byte ${st.pos} but only ${st.limit - st.pos} bytes are left`);
  const view = new DataView(st.buf.buffer, st.buf.byteOffset + st.pos, size);
  st.pos += size;
  return view;
}

/** A view of the next length-delimited value (callers copy it before handing it out). */
function readBytes(st: DecodeState): Uint8Array {
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

function safe(v: bigint): number | bigint {
  return v >= -MAX_SAFE && v <= MAX_SAFE ? Number(v) : v;
}

function readScalar(st: DecodeState, type: ScalarType): Scalar {
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

function skipField(st: DecodeState, number: number, wireType: number): void {
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
