// Its own module so encode.ts and decode.ts can throw it without importing the protobuf.ts facade.

/** Thrown for values that cannot be encoded and bytes that cannot be decoded. */
export class ProtobufError extends Error {
  override name = 'ProtobufError';
}
