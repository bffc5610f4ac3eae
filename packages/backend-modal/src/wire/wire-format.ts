// Protobuf wire types and which one each schema type is written with.
import type { ResolvedType, ScalarType } from './schema.js';

export const VARINT = 0;
export const I64 = 1;
export const LEN = 2;
export const SGROUP = 3;
export const EGROUP = 4;
export const I32 = 5;

export function wireTypeOf(type: ScalarType): number {
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
export function isPackable(type: ResolvedType): boolean {
  return type.kind === 'enum' || (type.kind === 'scalar' && wireTypeOf(type.scalar) !== LEN);
}
