// The simulator's schema with the pinned SDK's descriptors merged in: what only the SDK defines is
// served byte for byte as the SDK writes it (vectors from modal 1.6.4's own api_pb2, serialized by
// Python's protobuf), and the merge prefers the SDK where both define something.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SimCodec } from '../../src/modal-sim/codec.js';
import { MODAL_PACKAGE, mergeSchemas, readSdkDescriptors, type SdkDescriptors } from '../../src/modal-sim/sdk-schema.js';

const codec = SimCodec.forSimulator();
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const unhex = (t: string) => new Uint8Array(Buffer.from(t.replace(/\s+/g, ''), 'hex'));

describe("the simulator's schema (fields.json ∪ the SDK's descriptors)", () => {
  it('reads and writes SDK-only messages as the SDK does', () => {
    const create = {
      app_id: 'ap-1',
      definition: { entrypoint_args: ['sleep', '9'], image_id: 'im-1', secret_ids: ['st-a'] },
      tags: [{ tag_name: 'k', tag_value: 'v' }],
      secret_sources: [{ env: { contents: { FOO: 'bar' } } }, { secret_id: 'st-b' }],
    };
    const bytes = '0a0461702d3112160a05736c6565700a01391a04696d2d31220473742d6122060a016b120176320e120c0a0a0a03464f4f120362617232060a0473742d62';
    expect(hex(codec.encode('SandboxCreateV2Request', create))).toBe(bytes);
    expect(codec.decode('SandboxCreateV2Request', unhex(bytes))).toStrictEqual(create);
    const env = { environment_id: 'en-1', metadata: { name: 'main', settings: { image_builder_version: '2025.06' } } };
    expect(hex(codec.encode('EnvironmentGetOrCreateResponse', env))).toBe('0a04656e2d3112110a046d61696e12090a07323032352e3036');
    expect(hex(codec.encode('SandboxStdioReadV2Response', { data: Buffer.from('hi'), starting_offset: 5 }))).toBe('0a0268691005');
    expect(hex(codec.encode('google.protobuf.Empty', {}))).toBe('');
    expect(codec.decode('Empty', new Uint8Array())).toStrictEqual({});
  });

  it("takes the SDK's enums: values berth lacks, and types fields.json only names", () => {
    expect(codec.decode('SandboxWaitResponse', unhex('0a05080a188901'))).toStrictEqual({ result: { status: 'GENERIC_STATUS_KERNEL_OOM_KILL', exitcode: 137 } });
    // DeploymentNamespace is only named by fields.json; berth's own load() reads it as a number.
    const sdk = unhex('220461702d3140014a07323032352e3036');
    expect(codec.decode('ImageGetOrCreateRequest', sdk)).toStrictEqual({
      app_id: 'ap-1',
      namespace: 'DEPLOYMENT_NAMESPACE_WORKSPACE',
      builder_version: '2025.06',
    });
    expect(SimCodec.load().decode('ImageGetOrCreateRequest', sdk)).toMatchObject({ namespace: 1 });
  });

  it('merges: the SDK wins where both define a name or a number; berth fills in only what the SDK leaves out', () => {
    const sdk: SdkDescriptors = {
      sdk: { modal: 'x', protobuf: 'x' },
      messages: { M: { package: 'p', full_name: 'p.M', fields: { a: { number: 1, fields_json_type: 'string' } } } },
      enums: { E: { package: 'p', full_name: 'p.E', values: { E_ZERO: 0, E_ONE: 1 } } },
      services: {},
    };
    const berth = {
      M: { package: 'p', fields: { a: { number: 1, type: 'int32' }, b: { number: 1, type: 'string' }, c: { number: 3, type: 'bool' } } },
      E: { package: 'p', enum: { E_ZERO: 0, E_UNO: 1, E_TWO: 2 } },
      Only: { package: 'p', fields: { x: { number: 1, type: 'string' } } },
    };
    expect(mergeSchemas(berth, sdk)).toStrictEqual({
      M: { package: 'p', fields: { a: { number: 1, type: 'string' }, c: { number: 3, type: 'bool' } } },
      E: { package: 'p', enum: { E_ZERO: 0, E_ONE: 1, E_TWO: 2 } },
      Only: berth.Only,
    });
  });

  it('the snapshot is the pinned SDK (the lock file) and defines what fields.json names', () => {
    const sdk = readSdkDescriptors();
    const lock = readFileSync(join(MODAL_PACKAGE, 'test/sdk/requirements-sdk.lock.txt'), 'utf8');
    expect(lock).toMatch(new RegExp(`^modal==${sdk.sdk.modal.replace(/\./g, '\\.')}$`, 'm'));
    expect(lock).toMatch(new RegExp(`^protobuf==${sdk.sdk.protobuf.replace(/\./g, '\\.')}$`, 'm'));
    for (const name of ['SandboxCreateV2Request', 'SandboxStdioReadV2Request', 'google.protobuf.Empty', 'StringMap', 'SecretMetadata']) {
      expect(sdk.messages[name], name).toBeDefined();
    }
  });
});
