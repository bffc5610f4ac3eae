// Types for gen-schema.mjs, so TypeScript tests can import it.
/** Absolute path of src/wire/fields.json. */
export declare const FIELDS_JSON: string;
/** Absolute path of src/wire/schema-data.ts. */
export declare const SCHEMA_DATA: string;
/** The text of schema-data.ts for a parsed fields.json; throws on anything outside its shape. */
export declare function renderSchema(fields: unknown): string;
/** The text schema-data.ts should have, from fields.json on disk. */
export declare function renderSchemaFile(path?: string): string;
