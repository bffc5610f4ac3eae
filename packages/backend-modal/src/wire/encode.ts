// Encoding a message value: walks the schema's fields in number order, checks each JS value
// against its field type (naming the path of anything wrong) and writes it in protoc's layout.
import { describe, isRecord, safe, type Scalar } from './js-values.js';
import { ProtobufError } from './protobuf-error.js';
import type { FieldInfo, MessageInfo, ResolvedType, ScalarType, SchemaIndex } from './schema.js';
import { LEN, VARINT, isPackable, wireTypeOf } from './wire-format.js';
import { Writer, writeScalarData, writeVarint } from './wire-writer.js';

export function encodeWith(index: SchemaIndex, name: string, value: unknown): Uint8Array {
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

function writeMap(index: SchemaIndex, w: Writer, field: FieldInfo, type: Extract<ResolvedType, { kind: 'map' }>, value: unknown, path: string): void {
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

function writeValue(index: SchemaIndex, w: Writer, number: number, type: ResolvedType, value: unknown, presence: boolean, path: string): void {
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
