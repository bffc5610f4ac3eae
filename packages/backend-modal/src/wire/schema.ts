// Modal's protobuf schema and its types, in one import for the codec and the API wrappers:
// - schema-spec.ts: the shape fields.json is written in;
// - schema-data.ts: SCHEMA, the messages the backend speaks (generated from fields.json by
//   scripts/gen-schema.mjs: `npm run gen:schema -w @berth/backend-modal`);
// - schema-values.ts: the TypeScript types of message values, derived from a schema;
// - schema-index.ts: the resolved lookup tables the codec works from.
export type { EnumSpec, FieldSpec, MessageSpec, ScalarType, Schema } from './schema-spec.js';
export { SCHEMA } from './schema-data.js';
export type { EnumName, EnumNameOf, EnumValue, Int64, MessageName, MessageNameOf, MessageValue, OpaqueValue } from './schema-values.js';
export { indexSchema, isScalarType, type FieldInfo, type MessageInfo, type ResolvedType, type SchemaIndex } from './schema-index.js';
