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
// - fields whose type fields.json names but does not define: by the wire type that arrives, a
//   number for a varint (an enum) and raw bytes for length-delimited (a message); written the same way.
//
// This file is the entry point; encode.ts and decode.ts walk messages, wire-writer.ts and
// wire-reader.ts handle the bytes.
import { decodeWith } from './decode.js';
import { encodeWith } from './encode.js';
import { SCHEMA, indexSchema, type MessageNameOf, type MessageValue, type Schema } from './schema.js';

export { ProtobufError } from './protobuf-error.js';

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
