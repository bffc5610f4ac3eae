// fields.json, and the SCHEMA constant generated from it, against the descriptors of the Modal
// Python SDK berth follows (test/sdk/sdk-descriptors.json, dumped from the pinned SDK by
// test/sdk/dump-descriptors.py; CI regenerates it and checks it did not change). A field number,
// type, label, oneof or enum value that disagrees fails here, naming every disagreement. No engine.
//
// /work/shared/modal-wire/fields.json (the team's shared copy, outside the repository) is kept
// equal to src/wire/fields.json by hand; this test cannot read it on a fresh clone.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { FIELDS_JSON } from '../scripts/gen-schema.mjs';
import { MODAL_SDK_VERSION } from '../src/client-identity.js';
import { SCHEMA } from '../src/wire/schema.js';
import { compareWithSdk, type SdkDescriptors } from './support/sdk-compare.js';

const sdk = JSON.parse(readFileSync(new URL('./sdk/sdk-descriptors.json', import.meta.url), 'utf8')) as SdkDescriptors;
const fieldsJson = JSON.parse(readFileSync(FIELDS_JSON, 'utf8')) as Parameters<typeof compareWithSdk>[0];

describe("berth's schema against the pinned SDK's descriptors", () => {
  it('the descriptors are those of the SDK whose version berth sends (x-modal-client-version)', () => {
    expect(sdk.sdk.modal).toBe(MODAL_SDK_VERSION);
    expect(sdk.sdk.files).toEqual(expect.arrayContaining(['modal_proto/api.proto', 'modal_proto/task_command_router.proto']));
  });

  it.each([
    ['src/wire/fields.json', fieldsJson],
    ['src/wire/schema-data.ts (SCHEMA)', SCHEMA as unknown as Parameters<typeof compareWithSdk>[0]],
  ])('%s agrees with them on every message and enum it lists', (_, schema) => {
    const { problems } = compareWithSdk(schema, sdk);
    expect(problems, `disagreements with modal ${sdk.sdk.modal}:\n${problems.join('\n')}`).toEqual([]);
    // Every entry was compared: the schema is not empty, and every name is in the descriptors.
    expect(Object.keys(schema).length).toBeGreaterThan(50);
  });
});

describe('the comparison', () => {
  const descriptors: SdkDescriptors = {
    sdk: { modal: 'x', protobuf: 'x', files: [] },
    messages: {
      Result: {
        package: 'modal.client',
        full_name: 'modal.client.Result',
        fields: {
          status: { number: 1, fields_json_type: 'Result.Status' },
          tags: { number: 2, fields_json_type: 'string', fields_json_label: 'repeated' },
          data: { number: 5, fields_json_type: 'bytes', oneof: 'data_oneof' },
          env: { number: 6, fields_json_type: 'map<string,string>' },
          extra: { number: 9, fields_json_type: 'modal.client.Other' },
        },
      },
    },
    enums: { 'Result.Status': { package: 'modal.client', full_name: 'modal.client.Result.Status', values: { S_UNSPECIFIED: 0, S_OK: 1, S_NEW: 9 } } },
  };
  const agreeing = {
    Result: {
      package: 'modal.client',
      fields: {
        status: { number: 1, type: 'Status' },
        tags: { number: 2, type: 'string', label: 'repeated' },
        data: { number: 5, type: 'bytes', oneof: 'data_oneof' },
        env: { number: 6, type: 'map<string,string>' },
      },
    },
    'Result.Status': { package: 'modal.client', enum: { S_UNSPECIFIED: 0, S_OK: 1, S_NEW: 9 } },
  };

  it('accepts nested types named by scope and reports SDK fields berth leaves out apart', () => {
    expect(compareWithSdk(agreeing, descriptors)).toEqual({ problems: [], unlisted: ['Result: extra=9:modal.client.Other'] });
  });

  it('names each kind of disagreement', () => {
    const { problems } = compareWithSdk(
      {
        Result: {
          package: 'modal.sandbox',
          fields: {
            status: { number: 3, type: 'Status' },
            tags: { number: 2, type: 'bytes' },
            data: { number: 5, type: 'bytes' },
            gone: { number: 9, type: 'string' },
          },
        },
        'Result.Status': { package: 'modal.client', enum: { S_UNSPECIFIED: 0, S_OK: 2, S_MINE: 3 } },
        Nowhere: { package: 'modal.client', fields: {} },
      },
      descriptors,
    );
    expect(problems).toEqual([
      'Result: package modal.sandbox, SDK modal.client',
      'Result.status: number berth 3, SDK 1',
      'Result.tags: type berth "bytes", SDK "string"',
      'Result.tags: label berth undefined, SDK repeated',
      'Result.data: oneof berth undefined, SDK data_oneof',
      "Result.gone (#9): not in the SDK (the SDK's field 9 is 'extra')",
      'Result.Status.S_OK: berth 2, SDK 1',
      'Result.Status.S_MINE: value not in the SDK (berth 3)',
      'Result.Status.S_NEW = 9: in the SDK, missing from berth',
      "Nowhere: message not in the SDK's descriptors",
    ]);
  });

  it('would have caught the statuses berth lacked before (9 and 10)', () => {
    const old = JSON.parse(JSON.stringify(fieldsJson)) as Record<string, { enum?: Record<string, number> }>;
    const statuses = old['GenericResult.GenericStatus']!.enum!;
    delete statuses.GENERIC_STATUS_MEMORY_THRASHING_EVICTION;
    delete statuses.GENERIC_STATUS_KERNEL_OOM_KILL;
    expect(compareWithSdk(old as Parameters<typeof compareWithSdk>[0], sdk).problems).toEqual([
      'GenericResult.GenericStatus.GENERIC_STATUS_MEMORY_THRASHING_EVICTION = 9: in the SDK, missing from berth',
      'GenericResult.GenericStatus.GENERIC_STATUS_KERNEL_OOM_KILL = 10: in the SDK, missing from berth',
    ]);
  });
});
