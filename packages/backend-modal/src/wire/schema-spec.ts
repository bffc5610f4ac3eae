// The shape of a schema as fields.json writes it: messages and enums with field numbers and
// type names. These are the inputs; schema-index.ts resolves them into what the codec uses.

/** Protobuf scalar types. */
export type ScalarType =
  | 'double'
  | 'float'
  | 'int32'
  | 'int64'
  | 'uint32'
  | 'uint64'
  | 'sint32'
  | 'sint64'
  | 'fixed32'
  | 'fixed64'
  | 'sfixed32'
  | 'sfixed64'
  | 'bool'
  | 'string'
  | 'bytes';

/** One field of a message, as fields.json lists it. */
export interface FieldSpec {
  readonly number: number;
  /** A scalar type, `map<K,V>`, or the name of a message or enum (resolved with protobuf scoping). */
  readonly type: string;
  readonly label?: 'repeated' | 'optional';
  /** The oneof group this field belongs to. */
  readonly oneof?: string;
}

export interface MessageSpec {
  readonly package: string;
  readonly fields: { readonly [field: string]: FieldSpec };
}

export interface EnumSpec {
  readonly package: string;
  readonly enum: { readonly [name: string]: number };
}

/** Messages and enums keyed by their name inside their package (`Outer.Inner` when nested). */
export interface Schema {
  readonly [name: string]: MessageSpec | EnumSpec;
}
