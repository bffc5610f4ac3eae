// The simulator's schema: berth's fields.json ∪ the descriptors of the pinned Modal Python SDK
// (../sdk/sdk-descriptors.json, made by ../sdk/dump-descriptors.py). The SDK is the reference for
// what Modal's clients send, so where both define a field or an enum value the SDK's definition
// is used; fields.json fills in only what the SDK's snapshot leaves out. That way the simulator can
// serve messages berth does not know (V2 sandboxes, EnvironmentMetadata, SecretMetadata, Empty),
// and a misreading in berth's fields.json is not mirrored by the simulator.
import { readFileSync } from 'node:fs';
import type { RawField, RawSchema } from './codec.js';

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

export function readSdkDescriptors(): SdkDescriptors {
  return JSON.parse(readFileSync(new URL('../sdk/sdk-descriptors.json', import.meta.url), 'utf8')) as SdkDescriptors;
}

export function readFieldsJson(): RawSchema {
  return JSON.parse(readFileSync(new URL('../../src/wire/fields.json', import.meta.url), 'utf8')) as RawSchema;
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
