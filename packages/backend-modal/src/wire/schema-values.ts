// TypeScript types of message values, derived from a schema so callers get field names and
// value types checked at compile time. Nothing here exists at runtime.
import type { SCHEMA } from './schema-data.js';
import type { EnumSpec, FieldSpec, MessageSpec, ScalarType, Schema } from './schema-spec.js';

export type MessageNameOf<S extends Schema> = {
  [K in keyof S & string]: S[K] extends MessageSpec ? K : never;
}[keyof S & string];

export type EnumNameOf<S extends Schema> = {
  [K in keyof S & string]: S[K] extends EnumSpec ? K : never;
}[keyof S & string];

export type MessageName = MessageNameOf<typeof SCHEMA>;
export type EnumName = EnumNameOf<typeof SCHEMA>;

/** 64-bit integers decode to a number while it is a safe integer, to a bigint beyond that. */
export type Int64 = number | bigint;

/**
 * A field whose type fields.json names but does not define: raw bytes of the embedded message
 * (or a number, should it be an enum). The codec passes these through without interpreting them.
 */
export type OpaqueValue = Uint8Array | number;

/** An enum value: its name, or its number (decoding gives the number only for unknown values). */
export type EnumValue<E extends string, S extends Schema = typeof SCHEMA> = (S[E] extends EnumSpec ? keyof S[E]['enum'] & string : never) | number;

type Int64Type = 'int64' | 'uint64' | 'sint64' | 'fixed64' | 'sfixed64';

type ScalarValue<T extends ScalarType> = T extends 'string'
  ? string
  : T extends 'bool'
    ? boolean
    : T extends 'bytes'
      ? Uint8Array
      : T extends Int64Type
        ? Int64
        : number;

/** What a type name used inside message M refers to: a nested type first, then the package. */
type Resolve<S extends Schema, M extends string, T extends string> = `${M}.${T}` extends keyof S
  ? `${M}.${T}`
  : T extends keyof S
    ? S[T]['package'] extends S[M]['package']
      ? T
      : never
    : { [K in keyof S & string]: T extends `${S[K]['package']}.${K}` ? K : never }[keyof S & string];

type RefValue<S extends Schema, R extends string> = [R] extends [never] ? OpaqueValue : S[R] extends MessageSpec ? MessageValue<R, S> : EnumValue<R, S>;

type TypeValue<S extends Schema, M extends string, T extends string> = T extends ScalarType
  ? ScalarValue<T>
  : T extends `map<${string},${infer V}>`
    ? { [key: string]: TypeValue<S, M, V> }
    : RefValue<S, Resolve<S, M, T>>;

type FieldValue<S extends Schema, M extends string, F> = F extends FieldSpec
  ? F extends { readonly label: 'repeated' }
    ? readonly TypeValue<S, M, F['type']>[]
    : TypeValue<S, M, F['type']>
  : never;

/**
 * A message as a plain object keyed by proto field name. Every field is optional: when encoding, an
 * absent field is not written; when decoding, a field missing from the wire is absent (read it with
 * `?? default`). Maps are plain objects keyed by the map key as a string.
 */
export type MessageValue<N extends string, S extends Schema = typeof SCHEMA> = S[N] extends MessageSpec
  ? { -readonly [F in keyof S[N]['fields']]?: FieldValue<S, N, S[N]['fields'][F]> }
  : never;
