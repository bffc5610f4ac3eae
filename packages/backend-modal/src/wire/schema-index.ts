// Lookup tables the codec works from, built once per schema: type names resolved with protobuf
// scoping, fields sorted by number, oneofs grouped, and the schema checked for consistency.
import type { EnumSpec, MessageSpec, ScalarType, Schema } from './schema-spec.js';

export type ResolvedType =
  | { readonly kind: 'scalar'; readonly scalar: ScalarType }
  | {
      readonly kind: 'enum';
      readonly name: string;
      readonly numbers: ReadonlyMap<string, number>;
      /** The first name declared for each number (aliases share a number). */
      readonly names: ReadonlyMap<number, string>;
    }
  | { readonly kind: 'message'; readonly name: string }
  | { readonly kind: 'map'; readonly key: ScalarType; readonly value: ResolvedType }
  | { readonly kind: 'opaque'; readonly name: string };

export interface FieldInfo {
  readonly name: string;
  readonly number: number;
  readonly type: ResolvedType;
  readonly repeated: boolean;
  /** Written even when it holds its default value: `optional`, oneof members, and messages. */
  readonly explicitPresence: boolean;
  readonly oneof: string | undefined;
}

export interface MessageInfo {
  readonly name: string;
  readonly fullName: string;
  /** Ascending field number: the order protoc writes fields in. */
  readonly fields: readonly FieldInfo[];
  readonly byName: ReadonlyMap<string, FieldInfo>;
  readonly byNumber: ReadonlyMap<number, FieldInfo>;
  readonly oneofs: ReadonlyMap<string, readonly FieldInfo[]>;
}

export interface SchemaIndex {
  readonly schema: Schema;
  /** Throws for a name that is not a message of the schema. */
  message(name: string): MessageInfo;
  isMessage(name: string): boolean;
  /** The schema key of a fully qualified name such as `modal.client.SandboxCreateRequest`. */
  byFullName(fullName: string): string | undefined;
}

const SCALARS: ReadonlySet<string> = new Set<ScalarType>([
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

/** Protobuf only allows integral types, bool and string as map keys. */
const MAP_KEYS: ReadonlySet<string> = new Set([
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
]);

export function isScalarType(type: string): type is ScalarType {
  return SCALARS.has(type);
}

function isMessageSpec(entry: MessageSpec | EnumSpec | undefined): entry is MessageSpec {
  return entry !== undefined && 'fields' in entry;
}

const indexes = new WeakMap<Schema, SchemaIndex>();

/** Builds (once per schema object) the lookup tables, checking the schema is consistent. */
export function indexSchema(schema: Schema): SchemaIndex {
  let index = indexes.get(schema);
  if (!index) {
    index = buildIndex(schema);
    indexes.set(schema, index);
  }
  return index;
}

function buildIndex(schema: Schema): SchemaIndex {
  const fullNames = new Map<string, string>();
  for (const [name, entry] of Object.entries(schema)) fullNames.set(`${entry.package}.${name}`, name);
  const enums = new Map<string, ResolvedType>();
  const messages = new Map<string, MessageInfo>();

  const enumType = (name: string, spec: EnumSpec): ResolvedType => {
    let type = enums.get(name);
    if (!type) {
      const numbers = new Map(Object.entries(spec.enum));
      const names = new Map<number, string>();
      for (const [n, v] of numbers) if (!names.has(v)) names.set(v, n);
      type = { kind: 'enum', name, numbers, names };
      enums.set(name, type);
    }
    return type;
  };

  /** Protobuf scoping: look in the message itself, then each enclosing scope out to the root. */
  const resolveRef = (owner: string, type: string): ResolvedType => {
    const ownerSpec = schema[owner];
    const scope = ownerSpec ? `${ownerSpec.package}.${owner}`.split('.') : [];
    const candidates = type.startsWith('.')
      ? [type.slice(1)]
      : Array.from({ length: scope.length + 1 }, (_, i) => [...scope.slice(0, scope.length - i), type].join('.'));
    for (const candidate of candidates) {
      const name = fullNames.get(candidate);
      const spec = name === undefined ? undefined : schema[name];
      if (name === undefined || spec === undefined) continue;
      return isMessageSpec(spec) ? { kind: 'message', name } : enumType(name, spec);
    }
    return { kind: 'opaque', name: type };
  };

  const resolve = (owner: string, field: string, type: string): ResolvedType => {
    if (isScalarType(type)) return { kind: 'scalar', scalar: type };
    const map = /^map<\s*(\w+)\s*,\s*([\w.]+)\s*>$/.exec(type);
    if (map) {
      const [, key = '', value = ''] = map;
      if (!MAP_KEYS.has(key) || !isScalarType(key)) throw new Error(`schema: ${owner}.${field}: invalid map key type ${key}`);
      return { kind: 'map', key, value: resolve(owner, field, value) };
    }
    if (type.startsWith('map<')) throw new Error(`schema: ${owner}.${field}: unsupported map type ${type}`);
    return resolveRef(owner, type);
  };

  for (const [name, spec] of Object.entries(schema)) {
    if (!isMessageSpec(spec)) continue;
    const fields: FieldInfo[] = [];
    const byNumber = new Map<number, FieldInfo>();
    const oneofs = new Map<string, FieldInfo[]>();
    for (const [fieldName, f] of Object.entries(spec.fields)) {
      const type = resolve(name, fieldName, f.type);
      const repeated = f.label === 'repeated';
      if (!Number.isInteger(f.number) || f.number < 1 || f.number > 0x1fffffff || (f.number >= 19000 && f.number <= 19999)) {
        throw new Error(`schema: ${name}.${fieldName}: invalid field number ${f.number}`);
      }
      if (byNumber.has(f.number)) throw new Error(`schema: ${name}: field number ${f.number} used twice`);
      if (type.kind === 'map' && f.label !== undefined) throw new Error(`schema: ${name}.${fieldName}: a map cannot be ${f.label}`);
      if (f.oneof !== undefined && (f.label !== undefined || type.kind === 'map')) {
        throw new Error(`schema: ${name}.${fieldName}: oneof members cannot be repeated, optional or maps`);
      }
      const info: FieldInfo = {
        name: fieldName,
        number: f.number,
        type,
        repeated,
        explicitPresence: f.label === 'optional' || f.oneof !== undefined || type.kind === 'message',
        oneof: f.oneof,
      };
      fields.push(info);
      byNumber.set(f.number, info);
      if (f.oneof !== undefined) oneofs.set(f.oneof, [...(oneofs.get(f.oneof) ?? []), info]);
    }
    fields.sort((a, b) => a.number - b.number);
    messages.set(name, {
      name,
      fullName: `${spec.package}.${name}`,
      fields,
      byName: new Map(fields.map((f) => [f.name, f])),
      byNumber,
      oneofs,
    });
  }

  return {
    schema,
    message(name) {
      const info = messages.get(name);
      if (!info) throw new Error(`${JSON.stringify(name)} is not a message of the schema`);
      return info;
    },
    isMessage: (name) => messages.has(name),
    byFullName: (fullName) => fullNames.get(fullName.startsWith('.') ? fullName.slice(1) : fullName),
  };
}
