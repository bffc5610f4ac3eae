// The simulator's own proto3 codec. It reads its schema at run time (fields.json, merged with the
// pinned Modal SDK's descriptors for the simulator: sdk-schema.ts) and shares no code with the
// client's codec (src/wire/protobuf.ts), so a misreading of the schema there cannot be mirrored
// here and pass unnoticed. Values are plain objects keyed by snake_case field names, enums as
// their NAME strings (numbers when unknown), bytes as Uint8Array, maps as plain objects, 64-bit
// integers as numbers when safe and bigints otherwise: the shape test/support/text-format.ts makes.
// A type fields.json names but does not define may be an enum or a message: it is decoded by the
// wire type that arrives (varint: the enum's number; length-delimited: the message's raw bytes).
import { ProtoError, Reader, Writer } from './codec-io.js';
import { mergeSchemas, readFieldsJson, readSdkDescriptors, type RawField, type RawSchema } from './sdk-schema.js';

export type { RawField, RawSchema };

export { ProtoError };

export type Msg = Record<string, unknown>;

const SCALARS = new Set([
  'double',
  'float',
  'int32',
  'int64',
  'uint32',
  'uint64',
  'sint32',
  'sint64',
  'fixed32',
  'fixed64',
  'sfixed32',
  'sfixed64',
  'bool',
  'string',
  'bytes',
]);

type Type =
  | { kind: 'scalar'; scalar: string }
  | { kind: 'enum'; name: string; byName: Map<string, number>; byNumber: Map<number, string> }
  | { kind: 'message'; name: string }
  | { kind: 'map'; key: string; value: Type }
  /** Named in fields.json but not defined there: an enum's number or a message's raw bytes. */
  | { kind: 'opaque'; name: string };

interface Field {
  name: string;
  number: number;
  type: Type;
  repeated: boolean;
  /** Sent even when it holds the default value: `optional`, oneof members and messages. */
  presence: boolean;
  oneof?: string;
}

interface MessageInfo {
  name: string;
  fields: Field[];
  byNumber: Map<number, Field>;
}

/** google.rpc.Status details are Any messages; fields.json only names the type. */
const BUILTIN: RawSchema = {
  Any: { package: 'google.protobuf', fields: { type_url: { number: 1, type: 'string' }, value: { number: 2, type: 'bytes' } } },
};

const utf8 = new TextDecoder('utf-8', { fatal: true });
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

export class SimCodec {
  readonly #raw: Map<string, { package: string; fields?: Record<string, RawField>; enum?: Record<string, number> }> = new Map();
  readonly #messages = new Map<string, MessageInfo>();

  /** Keys are names relative to their package, or full names (`google.protobuf.Empty`). */
  constructor(schema: RawSchema) {
    for (const [name, spec] of Object.entries({ ...BUILTIN, ...schema }))
      this.#raw.set(name.startsWith(`${spec.package}.`) ? name : `${spec.package}.${name}`, spec);
  }

  /** The schema the client ships, read from disk (not imported: see the file comment). */
  static load(): SimCodec {
    return new SimCodec(readFieldsJson());
  }

  /** What the simulator serves with: fields.json ∪ the pinned SDK's descriptors (sdk-schema.ts). */
  static forSimulator(): SimCodec {
    return new SimCodec(mergeSchemas(readFieldsJson(), readSdkDescriptors()));
  }

  /** A full name (`modal.client.X`) or a name unique across packages (`X`). */
  fullName(name: string): string {
    if (this.#raw.has(name)) return name;
    const hits = [...this.#raw.keys()].filter(
      (k) =>
        k.endsWith(`.${name}`) &&
        k
          .slice(0, -name.length - 1)
          .split('.')
          .every((p) => /^[a-z_]/.test(p)),
    );
    if (hits.length !== 1) throw new ProtoError(`unknown or ambiguous message ${name}`);
    return hits[0] as string;
  }

  encode(name: string, value: Msg): Uint8Array {
    const out = new Writer();
    this.#encodeInto(this.#message(this.fullName(name)), value, out);
    return out.finish();
  }

  decode(name: string, bytes: Uint8Array): Msg {
    const out: Msg = {};
    this.#decodeInto(this.#message(this.fullName(name)), new Reader(bytes), out);
    return out;
  }

  #message(full: string): MessageInfo {
    const known = this.#messages.get(full);
    if (known) return known;
    const spec = this.#raw.get(full);
    if (!spec?.fields) throw new ProtoError(`${full} is not a message`);
    const fields = Object.entries(spec.fields)
      .map(([fname, f]): Field => {
        const type = this.#resolve(full, f.type);
        const presence = f.label === 'optional' || f.oneof !== undefined || type.kind === 'message';
        return { name: fname, number: f.number, type, repeated: f.label === 'repeated', presence, ...(f.oneof ? { oneof: f.oneof } : {}) };
      })
      .sort((a, b) => a.number - b.number); // protoc writes fields in number order
    const info = { name: full, fields, byNumber: new Map(fields.map((f) => [f.number, f])) };
    this.#messages.set(full, info);
    return info;
  }

  /** Protobuf scoping: innermost enclosing scope first, then outwards, then the name as given. */
  #resolve(scope: string, ref: string): Type {
    if (SCALARS.has(ref)) return { kind: 'scalar', scalar: ref };
    const map = /^map<\s*(\w+)\s*,\s*([\w.]+)\s*>$/.exec(ref);
    if (map) return { kind: 'map', key: map[1] as string, value: this.#resolve(scope, map[2] as string) };
    const candidates: string[] = [];
    if (ref.startsWith('.')) candidates.push(ref.slice(1));
    else {
      const parts = scope.split('.');
      for (let i = parts.length; i > 0; i--) candidates.push(`${parts.slice(0, i).join('.')}.${ref}`);
      candidates.push(ref);
    }
    for (const c of candidates) {
      const spec = this.#raw.get(c);
      if (spec?.enum) {
        const byName = new Map(Object.entries(spec.enum));
        return { kind: 'enum', name: c, byName, byNumber: new Map([...byName].map(([k, v]) => [v, k])) };
      }
      if (spec?.fields) return { kind: 'message', name: c };
    }
    return { kind: 'opaque', name: ref };
  }

  #encodeInto(info: MessageInfo, value: Msg, out: Writer): void {
    for (const field of info.fields) {
      const v = value[field.name];
      if (v === undefined || v === null) continue;
      if (field.type.kind === 'map') {
        for (const [k, item] of Object.entries(v as Record<string, unknown>)) {
          const entry = new Writer();
          this.#encodeValue(
            1,
            field.type.key === 'bool' ? k === 'true' : SCALARS.has(field.type.key) && field.type.key !== 'string' ? Number(k) : k,
            { kind: 'scalar', scalar: field.type.key },
            entry,
          );
          this.#encodeValue(2, item, field.type.value, entry);
          out.tag(field.number, 2).bytes(entry.finish());
        }
      } else if (field.repeated) {
        const items = v as unknown[];
        if (items.length === 0) continue;
        if (packable(field.type)) {
          const packed = new Writer();
          for (const item of items) this.#scalarBody(item, field.type, packed);
          out.tag(field.number, 2).bytes(packed.finish());
        } else for (const item of items) this.#encodeValue(field.number, item, field.type, out);
      } else if (field.presence || (field.type.kind === 'opaque' && v instanceof Uint8Array) || !isDefault(field.type, v)) {
        this.#encodeValue(field.number, v, field.type, out);
      }
    }
  }

  #encodeValue(number: number, v: unknown, type: Type, out: Writer): void {
    if (type.kind === 'message') {
      const inner = new Writer();
      this.#encodeInto(this.#message(type.name), v as Msg, inner);
      out.tag(number, 2).bytes(inner.finish());
    } else if (type.kind === 'opaque') {
      // Not in the schema: bytes are an encoded message, an integer an enum's number.
      if (v instanceof Uint8Array) out.tag(number, 2).bytes(v);
      else if (Number.isInteger(v)) out.tag(number, 0).varint(BigInt.asUintN(64, BigInt(v as number)));
      else throw new ProtoError(`${type.name} is not in the schema: give a message's encoding as bytes or an enum's number`);
    } else if (type.kind === 'map') {
      throw new ProtoError('a map cannot be nested');
    } else {
      out.tag(number, wireType(type));
      this.#scalarBody(v, type, out);
    }
  }

  #scalarBody(v: unknown, type: Type, out: Writer): void {
    if (type.kind === 'enum') {
      const n = typeof v === 'string' ? type.byName.get(v) : Number(v);
      if (n === undefined || !Number.isInteger(n)) throw new ProtoError(`${String(v)} is not a value of ${type.name}`);
      out.varint(BigInt(n));
      return;
    }
    const s = (type as { scalar: string }).scalar;
    switch (s) {
      case 'string':
        out.bytes(new TextEncoder().encode(String(v)));
        return;
      case 'bytes':
        out.bytes(v as Uint8Array);
        return;
      case 'bool':
        out.varint(v ? 1n : 0n);
        return;
      case 'float':
        out.fixed(4, (b) => b.writeFloatLE(Number(v)));
        return;
      case 'double':
        out.fixed(8, (b) => b.writeDoubleLE(Number(v)));
        return;
      case 'fixed32':
        out.fixed(4, (b) => b.writeUInt32LE(Number(v)));
        return;
      case 'sfixed32':
        out.fixed(4, (b) => b.writeInt32LE(Number(v)));
        return;
      case 'fixed64':
        out.fixed(8, (b) => b.writeBigUInt64LE(BigInt(v as number)));
        return;
      case 'sfixed64':
        out.fixed(8, (b) => b.writeBigInt64LE(BigInt(v as number)));
        return;
      case 'sint32':
      case 'sint64': {
        const n = BigInt(v as number);
        out.varint(n >= 0n ? n << 1n : (-n << 1n) - 1n);
        return;
      }
      default:
        // int32/int64 negatives are ten-byte two's complement; uint32/uint64 as given.
        out.varint(BigInt.asUintN(64, BigInt(v as number)));
    }
  }

  #decodeInto(info: MessageInfo, r: Reader, out: Msg): void {
    while (!r.done()) {
      const at = r.pos;
      const key = Number(r.varint());
      const number = key >>> 3;
      const wt = key & 7;
      if (number === 0) throw new ProtoError(`invalid tag ${key} at byte ${at} of ${info.name}: field number 0`);
      const field = info.byNumber.get(number);
      if (!field) {
        r.skip(wt, `field ${number} of ${info.name} at byte ${at}`);
        continue;
      }
      if (field.type.kind === 'map') {
        const entry = new Reader(r.lengthDelimited());
        const t = field.type;
        let k: unknown = defaultOf({ kind: 'scalar', scalar: t.key });
        let v: unknown = defaultOf(t.value);
        while (!entry.done()) {
          const ek = Number(entry.varint());
          if (ek >>> 3 === 1) k = this.#decodeValue(entry, { kind: 'scalar', scalar: t.key }, ek & 7);
          else if (ek >>> 3 === 2) v = this.#decodeValue(entry, t.value, ek & 7, v);
          else entry.skip(ek & 7, `field ${ek >>> 3} of a ${field.name} entry`);
        }
        ((out[field.name] ??= {}) as Msg)[String(k)] = v;
      } else if (field.repeated) {
        const list = (out[field.name] ??= []) as unknown[];
        if (wt === 2 && packable(field.type)) {
          const packed = new Reader(r.lengthDelimited());
          while (!packed.done()) list.push(this.#decodeValue(packed, field.type, wireType(field.type)));
        } else list.push(this.#decodeValue(r, field.type, wt));
      } else {
        if (field.oneof) for (const other of info.fields) if (other.oneof === field.oneof && other !== field) delete out[other.name];
        out[field.name] = this.#decodeValue(r, field.type, wt, out[field.name]);
      }
    }
  }

  #decodeValue(r: Reader, type: Type, wt: number, previous?: unknown): unknown {
    if (type.kind === 'message') {
      if (wt !== 2) throw new ProtoError(`wire type ${wt} for a message`);
      // A message field seen twice merges, as protobuf says.
      const target = (previous as Msg | undefined) ?? {};
      this.#decodeInto(this.#message(type.name), new Reader(r.lengthDelimited()), target);
      return target;
    }
    if (type.kind === 'opaque') {
      // Never assume which it is: a varint can only be an enum; length-delimited is a message (or a
      // packed repeated enum), kept as its raw bytes.
      if (wt === 0) return Number(BigInt.asIntN(32, r.varint()));
      if (wt === 2) return new Uint8Array(r.lengthDelimited());
      throw new ProtoError(`wire type ${wt} for ${type.name}, which fields.json does not define: an enum is a varint (0), a message length-delimited (2)`);
    }
    if (type.kind === 'map') throw new ProtoError('a map cannot be nested');
    if (type.kind === 'enum') {
      if (wt !== 0) throw new ProtoError(`wire type ${wt} for the enum ${type.name}`);
      const n = Number(BigInt.asIntN(32, r.varint()));
      return type.byNumber.get(n) ?? n;
    }
    const expected = wireType(type);
    if (wt !== expected) throw new ProtoError(`wire type ${wt} for a ${type.scalar}`);
    switch (type.scalar) {
      case 'string':
        return utf8.decode(r.lengthDelimited());
      case 'bytes':
        return new Uint8Array(r.lengthDelimited());
      case 'bool':
        return r.varint() !== 0n;
      case 'float':
        return r.fixed(4).readFloatLE();
      case 'double':
        return r.fixed(8).readDoubleLE();
      case 'fixed32':
        return r.fixed(4).readUInt32LE();
      case 'sfixed32':
        return r.fixed(4).readInt32LE();
      case 'fixed64':
        return safe(r.fixed(8).readBigUInt64LE());
      case 'sfixed64':
        return safe(r.fixed(8).readBigInt64LE());
      case 'int32':
        return Number(BigInt.asIntN(32, r.varint()));
      case 'uint32':
        return Number(BigInt.asUintN(32, r.varint()));
      case 'int64':
        return safe(BigInt.asIntN(64, r.varint()));
      case 'uint64':
        return safe(r.varint());
      case 'sint32':
      case 'sint64': {
        const n = r.varint();
        return safe(n & 1n ? -((n + 1n) >> 1n) : n >> 1n);
      }
      default:
        throw new ProtoError(`unknown scalar ${type.scalar}`);
    }
  }
}

function safe(n: bigint): number | bigint {
  return n > MAX_SAFE || n < -MAX_SAFE ? n : Number(n);
}

function packable(type: Type): boolean {
  return type.kind === 'enum' || (type.kind === 'scalar' && type.scalar !== 'string' && type.scalar !== 'bytes');
}

function wireType(type: Type): number {
  if (type.kind === 'enum') return 0;
  if (type.kind !== 'scalar') return 2;
  if (['double', 'fixed64', 'sfixed64'].includes(type.scalar)) return 1;
  if (['float', 'fixed32', 'sfixed32'].includes(type.scalar)) return 5;
  if (type.scalar === 'string' || type.scalar === 'bytes') return 2;
  return 0;
}

function defaultOf(type: Type): unknown {
  if (type.kind === 'enum') return type.byNumber.get(0) ?? 0;
  if (type.kind === 'message') return {};
  if (type.kind !== 'scalar') return new Uint8Array(0);
  if (type.scalar === 'string') return '';
  if (type.scalar === 'bytes') return new Uint8Array(0);
  if (type.scalar === 'bool') return false;
  return 0;
}

function isDefault(type: Type, v: unknown): boolean {
  if (type.kind === 'enum') return v === 0 || v === type.byNumber.get(0);
  if (v instanceof Uint8Array) return v.length === 0;
  if (typeof v === 'number') return Object.is(v, 0);
  return v === 0n || v === '' || v === false;
}
