// berth's schema (fields.json, or the SCHEMA constant generated from it) against the descriptors
// of Modal's pinned Python SDK (test/sdk/sdk-descriptors.json): the rules of the reconnaissance's
// compare_fields.py, ported. Every message and enum berth lists must be the SDK's: the same
// package, every field with the same number, type, label and oneof, every enum value with the
// same number and no SDK value missing (a status berth cannot name reads as a bare number). SDK
// fields berth leaves out are fine (berth never sends them and the codec skips them): reported
// apart, as information.

/** One entry of fields.json (schema-spec.ts's shape, loosely: the test also reads raw JSON). */
interface BerthEntry {
  package?: string;
  fields?: Record<string, { number: number; type: string; label?: string; oneof?: string }>;
  enum?: Record<string, number>;
}

interface SdkField {
  number: number;
  fields_json_type: string;
  fields_json_label?: string;
  oneof?: string;
}

export interface SdkDescriptors {
  sdk: { modal: string; protobuf: string; files: string[] };
  messages: Record<string, { package: string; full_name: string; fields: Record<string, SdkField> }>;
  enums: Record<string, { package: string; full_name: string; values: Record<string, number> }>;
}

export interface Comparison {
  /** Disagreements: each fails the test. */
  problems: string[];
  /** SDK fields berth does not list, per message. */
  unlisted: string[];
}

export function compareWithSdk(schema: Readonly<Record<string, BerthEntry>>, sdk: SdkDescriptors): Comparison {
  const problems: string[] = [];
  const unlisted: string[] = [];
  for (const [name, entry] of Object.entries(schema)) {
    if (entry.enum) {
      const theirs = sdk.enums[name];
      if (!theirs) {
        problems.push(`${name}: enum not in the SDK's descriptors`);
        continue;
      }
      if (entry.package && entry.package !== theirs.package) problems.push(`${name}: package ${entry.package}, SDK ${theirs.package}`);
      for (const [value, number] of Object.entries(entry.enum)) {
        const sdkNumber = theirs.values[value];
        if (sdkNumber === undefined) problems.push(`${name}.${value}: value not in the SDK (berth ${number})`);
        else if (sdkNumber !== number) problems.push(`${name}.${value}: berth ${number}, SDK ${sdkNumber}`);
      }
      for (const [value, number] of Object.entries(theirs.values))
        if (!(value in entry.enum)) problems.push(`${name}.${value} = ${number}: in the SDK, missing from berth`);
      continue;
    }
    // A type of another package (google.protobuf.Empty) is listed in the SDK's dump under its full name.
    const theirs = sdk.messages[name] ?? (entry.package ? sdk.messages[`${entry.package}.${name}`] : undefined);
    if (!theirs) {
      problems.push(`${name}: message not in the SDK's descriptors`);
      continue;
    }
    if (entry.package && entry.package !== theirs.package) problems.push(`${name}: package ${entry.package}, SDK ${theirs.package}`);
    const ours = entry.fields ?? {};
    for (const [field, spec] of Object.entries(ours)) {
      const at = `${name}.${field}`;
      const their = theirs.fields[field];
      if (!their) {
        const same = Object.entries(theirs.fields).find(([, f]) => f.number === spec.number);
        problems.push(`${at} (#${spec.number}): not in the SDK${same ? ` (the SDK's field ${spec.number} is '${same[0]}')` : ''}`);
        continue;
      }
      if (their.number !== spec.number) problems.push(`${at}: number berth ${spec.number}, SDK ${their.number}`);
      // fields.json names a nested type as protobuf scoping does: GenericStatus inside GenericResult.
      if (their.fields_json_type !== spec.type && their.fields_json_type !== `${name}.${spec.type}`)
        problems.push(`${at}: type berth ${JSON.stringify(spec.type)}, SDK ${JSON.stringify(their.fields_json_type)}`);
      if (spec.label !== their.fields_json_label) problems.push(`${at}: label berth ${String(spec.label)}, SDK ${String(their.fields_json_label)}`);
      if (spec.oneof !== their.oneof) problems.push(`${at}: oneof berth ${String(spec.oneof)}, SDK ${String(their.oneof)}`);
    }
    const missing = Object.entries(theirs.fields).filter(([field]) => !(field in ours));
    if (missing.length) unlisted.push(`${name}: ${missing.map(([f, s]) => `${f}=${s.number}:${s.fields_json_type}`).join(', ')}`);
  }
  return { problems, unlisted };
}
