// Decoding a message value: reads fields into a plain object, merging repeated messages, keeping
// the last oneof member, and skipping unknown fields or fields sent with the wrong wire type.
import { describe, isRecord, type Scalar } from './js-values.js';
import { ProtobufError } from './protobuf-error.js';
import type { FieldInfo, MessageInfo, ResolvedType, ScalarType, SchemaIndex } from './schema.js';
import { LEN, VARINT, isPackable, wireTypeOf } from './wire-format.js';
import { Malformed, enter, leave, readBytes, readScalar, readVarint, skipField, type DecodeState } from './wire-reader.js';

export function decodeWith(index: SchemaIndex, name: string, bytes: Uint8Array): Record<string, unknown> {
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

function readField(index: SchemaIndex, st: DecodeState, info: MessageInfo, field: FieldInfo, wireType: number, out: Record<string, unknown>): void {
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

function readMapEntry(index: SchemaIndex, st: DecodeState, type: Extract<ResolvedType, { kind: 'map' }>, map: Record<string, unknown>): void {
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
