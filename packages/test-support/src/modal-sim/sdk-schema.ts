// The simulator's schema: berth's fields.json ∪ the descriptors of the pinned Modal Python SDK
// (@berth/backend-modal's test/sdk/sdk-descriptors.json, made by its test/sdk/dump-descriptors.py). The SDK is the reference for
// what Modal's clients send, so where both define a field or an enum value the SDK's definition
// is used; fields.json fills in only what the SDK's snapshot leaves out. That way the simulator can
// serve messages berth does not know (V2 sandboxes, EnvironmentMetadata, SecretMetadata, Empty),
// and a misreading in berth's fields.json is not mirrored by the simulator.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/** A field as fields.json writes it (the codec's input). */
export interface RawField {
  number: number;
  type: string;
  label?: string;
  oneof?: string;
}
/** fields.json's shape: messages and enums by name relative to their package. */
export type RawSchema = Record<string, { package: string; fields?: Record<string, RawField>; enum?: Record<string, number> }>;

interface SdkField {
  number: number;
  fields_json_type: string;
  fields_json_label?: string;
  oneof?: string;
}

export interface SdkDescriptors {
  sdk: { modal: string; protobuf: string };
  messages: Record<string, { package: string; full_name: string; fields: Record<string, SdkField> }>;
  enums: Record<string, { package: string; full_name: string; values: Record<string, number> }>;
  services: Record<string, Record<string, { input: string; output: string; server_streaming: boolean; client_streaming: boolean }>>;
}

/** @berth/backend-modal's directory: the client the simulator serves holds both schemas' sources. */
export const MODAL_PACKAGE = dirname(createRequire(import.meta.url).resolve('@berth/backend-modal/package.json'));

export function readSdkDescriptors(): SdkDescriptors {
  return JSON.parse(readFileSync(join(MODAL_PACKAGE, 'test/sdk/sdk-descriptors.json'), 'utf8')) as SdkDescriptors;
}

export function readFieldsJson(): RawSchema {
  return JSON.parse(readFileSync(join(MODAL_PACKAGE, 'src/wire/fields.json'), 'utf8')) as RawSchema;
}

/**
 * Keys as the codec takes them: a name relative to its package (fields.json's notation); types of
 * another package (google.protobuf.Empty) keep their full name, so they cannot collide with Modal's.
 */
export function mergeSchemas(berth: RawSchema, sdk: SdkDescriptors): RawSchema {
  const out: RawSchema = { ...berth };
  for (const [key, m] of Object.entries(sdk.messages)) {
    const fields: Record<string, RawField> = {};
    for (const [name, f] of Object.entries(m.fields))
      fields[name] = {
        number: f.number,
        type: f.fields_json_type,
        ...(f.fields_json_label ? { label: f.fields_json_label } : {}),
        ...(f.oneof ? { oneof: f.oneof } : {}),
      };
    const numbers = new Set(Object.values(fields).map((f) => f.number));
    for (const [name, f] of Object.entries(berth[key]?.fields ?? {})) if (!(name in fields) && !numbers.has(f.number)) fields[name] = f;
    out[key] = { package: m.package, fields };
  }
  for (const [key, e] of Object.entries(sdk.enums)) {
    const values = { ...e.values };
    const numbers = new Set(Object.values(values));
    for (const [name, n] of Object.entries(berth[key]?.enum ?? {})) if (!(name in values) && !numbers.has(n)) values[name] = n;
    out[key] = { package: e.package, enum: values };
  }
  return out;
}
