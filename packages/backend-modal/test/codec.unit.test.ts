import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ProtobufError, createCodec, decodeMessage, encodeMessage } from '../src/wire/protobuf.js';
import { SCHEMA, indexSchema, type MessageName, type MessageValue, type Schema } from '../src/wire/schema.js';
import { parseTextFormat, stripDefaults } from './support/text-format.js';

interface Vector {
  message: string;
  text: string;
  hex: string;
}

const vectors = JSON.parse(readFileSync(new URL('./fixtures/vectors.json', import.meta.url), 'utf8')) as Vector[];
const index = indexSchema(SCHEMA);

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');
const unhex = (text: string): Uint8Array => new Uint8Array(Buffer.from(text.replace(/\s+/g, ''), 'hex'));

/** The vectors name messages at run time, so the static field types cannot help here. */
function encodeAny(name: MessageName, value: Record<string, unknown>): Uint8Array {
  return encodeMessage(name, value as MessageValue<MessageName>);
}

function messageOf(fullName: string): MessageName {
  const name = index.byFullName(fullName);
  if (name === undefined || !index.isMessage(name)) throw new Error(`${fullName} is not in the schema`);
  return name as MessageName;
}

/** The error a call throws, so tests can check both its class and its message. */
function errorOf(fn: () => unknown): Error {
  try {
    fn();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected an error');
}

describe('schema', () => {
  it('resolves nested enums by their short name and sorts fields by number', () => {
    const result = index.message('GenericResult');
    expect(result.byName.get('status')?.type).toMatchObject({ kind: 'enum', name: 'GenericResult.GenericStatus' });
    expect(index.message('NetworkAccess').byName.get('network_access_type')?.type).toMatchObject({
      kind: 'enum',
      name: 'NetworkAccess.NetworkAccessType',
    });
    const numbers = index.message('Sandbox').fields.map((f) => f.number);
    expect(numbers).toStrictEqual([...numbers].sort((a, b) => a - b));
  });

  it('treats types fields.json names but does not define as opaque', () => {
    expect(index.message('Sandbox').byName.get('readiness_probe')?.type).toStrictEqual({ kind: 'opaque', name: 'Probe' });
    // Defined since exec takes a terminal: a message, its enum nested.
    expect(index.message('TaskExecStartRequest').byName.get('pty_info')?.type).toStrictEqual({ kind: 'message', name: 'PTYInfo' });
    expect(index.message('PTYInfo').byName.get('pty_type')?.type).toMatchObject({ kind: 'enum', name: 'PTYInfo.PTYType' });
    expect(index.message('RPCStatus').byName.get('details')?.type).toStrictEqual({ kind: 'opaque', name: 'google.protobuf.Any' });
  });
});

describe("golden vectors from protoc --encode and Modal's SDK", () => {
  it("has all 41: 32 from protoc --encode, 9 serialized by Modal's SDK's own classes (exec env as secret_sources; the V2 sandbox create, router access and auth token)", () => {
    expect(vectors).toHaveLength(45);
  });

  it.each(vectors.map((v, i) => [`#${i} ${v.message}: ${v.text.slice(0, 60)}`, v] as const))('%s', (_, vector) => {
    const name = messageOf(vector.message);
    const parsed = parseTextFormat(name, vector.text);

    expect(hex(encodeAny(name, parsed))).toBe(vector.hex);

    const bytes = unhex(vector.hex);
    const decoded = decodeMessage(name, bytes);
    expect(decoded).toStrictEqual(stripDefaults(name, parsed));
    // A Buffer decodes the same, and what was decoded encodes back to the same bytes.
    expect(decodeMessage(name, Buffer.from(bytes))).toStrictEqual(decoded);
    expect(hex(encodeAny(name, decoded))).toBe(vector.hex);
  });
});

describe('varint integers', () => {
  it('writes a negative int32 as ten bytes and reads it back', () => {
    const bytes = encodeMessage('TaskExecWaitResponse', { code: -1 });
    expect(hex(bytes)).toBe('08ffffffffffffffffff01');
    expect(decodeMessage('TaskExecWaitResponse', bytes)).toStrictEqual({ code: -1 });

    const min = encodeMessage('GenericResult', { exitcode: -2147483648 });
    expect(hex(min)).toBe('1880808080f8ffffffff01');
    expect(decodeMessage('GenericResult', min)).toStrictEqual({ exitcode: -2147483648 });
  });

  it('rejects int32 values out of range or not integers', () => {
    expect(() => encodeMessage('RPCStatus', { code: 2 ** 31 })).toThrow(/RPCStatus\.code: 2147483648 is out of range for int32/);
    expect(() => encodeMessage('RPCStatus', { code: 1.5 })).toThrow(/RPCStatus\.code: expected an integer/);
  });

  it('carries a uint64 beyond 2^53 as a bigint', () => {
    const max = 2n ** 64n - 1n;
    const bytes = encodeMessage('TaskExecStdioReadRequest', { offset: max });
    expect(hex(bytes)).toBe('18ffffffffffffffffff01');
    expect(decodeMessage('TaskExecStdioReadRequest', bytes)).toStrictEqual({ offset: max });

    const beyond = decodeMessage('TaskExecStdioReadRequest', encodeMessage('TaskExecStdioReadRequest', { offset: 2 ** 53 }));
    expect(beyond).toStrictEqual({ offset: 2n ** 53n });
    const safe = decodeMessage('TaskExecStdioReadRequest', encodeMessage('TaskExecStdioReadRequest', { offset: Number.MAX_SAFE_INTEGER }));
    expect(safe).toStrictEqual({ offset: Number.MAX_SAFE_INTEGER });
    expect(hex(encodeMessage('TaskExecStdioReadRequest', { offset: 4096n }))).toBe('188020');
  });

  it('rejects uint64 values out of range', () => {
    expect(() => encodeMessage('TaskExecStdinWriteRequest', { offset: -1 })).toThrow(/offset: -1 is out of range for uint64/);
    expect(() => encodeMessage('TaskExecStdinWriteRequest', { offset: 2n ** 64n })).toThrow(/out of range for uint64/);
  });

  it('rejects varints longer than 64 bits', () => {
    const error = errorOf(() => decodeMessage('TaskExecStdioReadRequest', unhex('18ffffffffffffffffff7f')));
    expect(error).toBeInstanceOf(ProtobufError);
    expect(error.message).toMatch(/TaskExecStdioReadRequest.*overflows 64 bits.*TaskExecStdioReadRequest\.offset \(field 3\)/);
    // Ten bytes, but the last carries bits beyond the 64th.
    expect(() => decodeMessage('TaskExecStdioReadRequest', unhex('1880808080808080808002'))).toThrow(/overflows 64 bits/);
  });
});

describe('proto3 presence', () => {
  it('omits defaults of plain fields but writes explicit-presence ones', () => {
    expect(hex(encodeMessage('GenericResult', { status: 'GENERIC_STATUS_UNSPECIFIED', exitcode: 0, exception: '', data_blob_id: '' }))).toBe('5200');
    expect(hex(encodeMessage('Sandbox', { workdir: '', timeout_secs: 0, entrypoint_args: [], experimental_options: {} }))).toBe('4200');
    expect(hex(encodeMessage('SandboxGetTaskIdRequest', { timeout: 0, wait_until_ready: false }))).toBe('1500000000');
    expect(hex(encodeMessage('TaskExecWaitResponse', { code: 0 }))).toBe('0800');
    expect(hex(encodeMessage('SandboxCreateRequest', { definition: {} }))).toBe('1200');
    expect(hex(encodeMessage('SandboxCreateRequest', { app_id: undefined }))).toBe('');
  });

  it('writes -0.0 for floats, which is not the default bit pattern', () => {
    expect(hex(encodeMessage('SandboxWaitRequest', { timeout: -0 }))).toBe('1500000080');
  });

  it('keeps only the last oneof member on decode and refuses two on encode', () => {
    expect(decodeMessage('TaskExecWaitResponse', unhex('0803 1009'))).toStrictEqual({ signal: 9 });
    expect(decodeMessage('GenericResult', unhex('2a0161 5201 62 2a0163'))).toStrictEqual({ data: new Uint8Array([0x63]) });
    expect(() => encodeMessage('TaskExecWaitResponse', { code: 1, signal: 9 })).toThrow(/oneof exit_status has more than one member set/);
  });

  it('merges a message field that appears twice, as protobuf does', () => {
    // result { status: SUCCESS } then result { exception: "x" }: one result with both.
    const bytes = unhex('0a020801 0a03120178');
    expect(decodeMessage('SandboxWaitResponse', bytes)).toStrictEqual({ result: { status: 'GENERIC_STATUS_SUCCESS', exception: 'x' } });
  });
});

describe('enums', () => {
  it('encode from the name or the number and decode to the name', () => {
    const byName = encodeMessage('AppGetOrCreateRequest', { object_creation_type: 'OBJECT_CREATION_TYPE_EPHEMERAL' });
    expect(hex(encodeMessage('AppGetOrCreateRequest', { object_creation_type: 5 }))).toBe(hex(byName));
    expect(decodeMessage('AppGetOrCreateRequest', byName)).toStrictEqual({ object_creation_type: 'OBJECT_CREATION_TYPE_EPHEMERAL' });
  });

  it('decode unknown numbers (including negative ones) as numbers', () => {
    expect(decodeMessage('AppGetOrCreateRequest', unhex('1863'))).toStrictEqual({ object_creation_type: 99 });
    const negative = encodeMessage('AppGetOrCreateRequest', { object_creation_type: -3 });
    expect(hex(negative)).toBe('18fdffffffffffffffff01');
    expect(decodeMessage('AppGetOrCreateRequest', negative)).toStrictEqual({ object_creation_type: -3 });
  });

  it('reject unknown names', () => {
    expect(() => encodeMessage('ImageRegistryConfig', { registry_auth_type: 'BASIC' as 'REGISTRY_AUTH_TYPE_AWS' })).toThrow(
      /ImageRegistryConfig\.registry_auth_type: "BASIC" is not a value of enum RegistryAuthType/,
    );
  });
});

describe('maps', () => {
  it('are plain objects, written in insertion order with key and value always present', () => {
    const bytes = encodeMessage('TaskExecStartRequest', { env: { B: '', A: '1' } });
    expect(hex(bytes)).toBe('6205 0a0142 1200 6206 0a0141 120131'.replace(/ /g, ''));
    expect(decodeMessage('TaskExecStartRequest', bytes)).toStrictEqual({ env: { B: '', A: '1' } });
  });

  it('fill a missing key or value with its default and let a later entry win', () => {
    // { value: "x" }, { key: "k" }, { key: "k", value: "y" }
    const bytes = unhex('6203 120178 6203 0a016b 6206 0a016b 120179');
    expect(decodeMessage('TaskExecStartRequest', bytes)).toStrictEqual({ env: { '': 'x', k: 'y' } });
  });

  it('keep "__proto__" as an ordinary key', () => {
    const env = JSON.parse('{"__proto__":"v"}') as Record<string, string>;
    const decoded = decodeMessage('TaskExecStartRequest', encodeMessage('TaskExecStartRequest', { env }));
    expect(Object.keys(decoded.env ?? {})).toStrictEqual(['__proto__']);
    expect(Object.getPrototypeOf(decoded.env)).toBe(Object.prototype);
  });

  it('refuse a Map, which would otherwise encode as empty', () => {
    const env = new Map([['A', '1']]) as unknown as Record<string, string>;
    expect(() => encodeMessage('TaskExecStartRequest', { env })).toThrow(/TaskExecStartRequest\.env: expected a plain object for a map, got a Map/);
  });

  it('decode bool map values', () => {
    const bytes = encodeMessage('Sandbox', { experimental_options: { fast: true, slow: false } });
    expect(decodeMessage('Sandbox', bytes)).toStrictEqual({ experimental_options: { fast: true, slow: false } });
  });
});

describe('bytes and strings', () => {
  it('take a Buffer and give back a copy as a plain Uint8Array', () => {
    const input = Buffer.from('line\n');
    const bytes = encodeMessage('TaskExecStdinWriteRequest', { data: input });
    expect(hex(bytes)).toBe('22056c696e650a');
    const decoded = decodeMessage('TaskExecStdinWriteRequest', bytes);
    expect(decoded.data).toStrictEqual(new Uint8Array(input));
    bytes.fill(0);
    expect(decoded.data).toStrictEqual(new Uint8Array(input));
  });

  it('reject invalid UTF-8 in strings, naming the field', () => {
    expect(() => decodeMessage('AuthTokenGetResponse', unhex('0a02c328'))).toThrow(/AuthTokenGetResponse.*invalid UTF-8.*AuthTokenGetResponse\.token/);
  });

  it('keep a leading byte-order mark', () => {
    expect(decodeMessage('AuthTokenGetResponse', unhex('0a03efbbbf'))).toStrictEqual({ token: '\uFEFF' });
  });
});

describe('types the schema does not define', () => {
  it('pass through as raw bytes', () => {
    const metadata = unhex('0a0474657374');
    const bytes = encodeMessage('ImageGetOrCreateResponse', { image_id: 'im-9', metadata });
    expect(hex(bytes)).toBe('0a04696d2d39 1a06 0a0474657374'.replace(/ /g, ''));
    expect(decodeMessage('ImageGetOrCreateResponse', bytes)).toStrictEqual({ image_id: 'im-9', metadata });
    const details = [unhex('0a01 61'), unhex('')];
    expect(decodeMessage('RPCStatus', encodeMessage('RPCStatus', { code: 8, details }))).toStrictEqual({ code: 8, details });
  });

  it("are numbers when they arrive as a varint: an enum, as ImageGetOrCreateRequest.namespace from Modal's SDK", () => {
    const sdk = unhex('2204 61702d31 4001 4a07 323032352e3036'); // app_id, namespace: WORKSPACE (1), builder_version
    expect(decodeMessage('ImageGetOrCreateRequest', sdk)).toStrictEqual({ app_id: 'ap-1', namespace: 1, builder_version: '2025.06' });
    expect(hex(encodeMessage('ImageGetOrCreateRequest', { app_id: 'ap-1', namespace: 1, builder_version: '2025.06' }))).toBe(hex(sdk));
  });
});

describe('unknown fields', () => {
  it('are skipped, whatever their wire type', () => {
    const known = unhex('0a0961702d313233616263'); // app_id: "ap-123abc"
    const unknown = unhex(
      [
        '38 96 01', // field 7, varint
        '41 0102030405060708', // field 8, fixed64
        '4a 03 616263', // field 9, length-delimited
        '55 01020304', // field 10, fixed32
        '5b 08 01 62 01 78 5c', // field 11, group holding a varint and a string
        'f8ffffff0f 01', // field 536870911 (the largest), varint
      ].join(''),
    );
    const bytes = new Uint8Array([...unknown.subarray(0, 3), ...known, ...unknown.subarray(3)]);
    expect(decodeMessage('AppGetOrCreateResponse', bytes)).toStrictEqual({ app_id: 'ap-123abc' });
  });

  it('are skipped inside nested messages and maps too', () => {
    // result { status: SUCCESS, <field 99: "zz"> }, env entry with field 3
    const nested = unhex('0a07 0801 9a06027a7a');
    expect(decodeMessage('SandboxWaitResponse', nested)).toStrictEqual({ result: { status: 'GENERIC_STATUS_SUCCESS' } });
    const entry = unhex('6208 0a016b 120176 1801');
    expect(decodeMessage('TaskExecStartRequest', entry)).toStrictEqual({ env: { k: 'v' } });
  });

  it('include known field numbers on the wrong wire type', () => {
    // app_id (a string) as a varint, then as it should be.
    expect(decodeMessage('AppGetOrCreateResponse', unhex('0807 0a0178'))).toStrictEqual({ app_id: 'x' });
  });
});

describe('malformed input', () => {
  it('rejects a truncated buffer, saying which message and field', () => {
    const vector = vectors.find((v) => v.message === 'modal.client.SandboxCreateRequest');
    const bytes = unhex(vector?.hex ?? '');
    const error = errorOf(() => decodeMessage('SandboxCreateRequest', bytes.subarray(0, bytes.length - 1)));
    expect(error).toBeInstanceOf(ProtobufError);
    expect(error.message).toMatch(/^decodeMessage\(SandboxCreateRequest\): truncated: .* in SandboxCreateRequest\.tags \(field 4\)$/);
  });

  it('names the path into nested messages', () => {
    // definition { workdir: <5 bytes claimed, 2 there> }
    const error = errorOf(() => decodeMessage('SandboxCreateRequest', unhex('1204 4205 2f61')));
    expect(error.message).toBe(
      'decodeMessage(SandboxCreateRequest): truncated: a length-delimited value of 5 bytes at byte 4 but only 2 bytes are left ' +
        'in SandboxCreateRequest.definition (field 2) > Sandbox.workdir (field 8)',
    );
  });

  it('rejects every truncation of every vector with a ProtobufError, or decodes it', () => {
    for (const vector of vectors) {
      const name = messageOf(vector.message);
      const bytes = unhex(vector.hex);
      for (let end = 0; end < bytes.length; end++) {
        try {
          decodeMessage(name, bytes.subarray(0, end));
        } catch (error) {
          expect(error).toBeInstanceOf(ProtobufError);
          expect((error as Error).message).toContain(`decodeMessage(${name})`);
        }
      }
    }
  });

  it('rejects a truncated varint, fixed value, and a group without its end', () => {
    expect(() => decodeMessage('SandboxWaitRequest', unhex('1500'))).toThrow(/truncated: a 32-bit value .* SandboxWaitRequest\.timeout/);
    expect(() => decodeMessage('TaskExecWaitResponse', unhex('08ff'))).toThrow(/truncated varint at byte 1 in TaskExecWaitResponse\.code/);
    expect(() => decodeMessage('TaskExecWaitResponse', unhex('5b0801'))).toThrow(/group 11 has no end in TaskExecWaitResponse unknown field 11/);
    expect(() => decodeMessage('TaskExecWaitResponse', unhex('5b0801 64'))).toThrow(/group 11 closed by end-group 12/);
  });

  it('rejects invalid wire types, field number 0 and stray end-group tags', () => {
    expect(() => decodeMessage('TaskExecWaitResponse', unhex('0f00'))).toThrow(/invalid wire type 7 for field 1/);
    expect(() => decodeMessage('TaskExecWaitResponse', unhex('0001'))).toThrow(/invalid tag at byte 0 of TaskExecWaitResponse/);
    expect(() => decodeMessage('TaskExecWaitResponse', unhex('0c'))).toThrow(/unexpected end-group tag for field 1/);
  });
});

describe('encoding checks', () => {
  it('rejects unknown fields and wrong value types, with the path', () => {
    const value = { definition: { resources: { memory_mb: '2048' } } } as unknown as MessageValue<'SandboxCreateRequest'>;
    expect(() => encodeMessage('SandboxCreateRequest', value)).toThrow(
      'encodeMessage: SandboxCreateRequest.definition.resources.memory_mb: expected an integer for uint32, got the string "2048"',
    );
    const typo = { app_idd: 'x' } as unknown as MessageValue<'SandboxCreateRequest'>;
    expect(() => encodeMessage('SandboxCreateRequest', typo)).toThrow(/SandboxCreateRequest has no field "app_idd"/);
    const list = { tags: [{ tag_name: 'a' }, null] } as unknown as MessageValue<'SandboxCreateRequest'>;
    expect(() => encodeMessage('SandboxCreateRequest', list)).toThrow(/SandboxCreateRequest\.tags\[1\]: repeated fields cannot hold null/);
  });

  it('rejects names that are not messages', () => {
    expect(() => encodeAny('ObjectCreationType' as MessageName, {})).toThrow(ProtobufError);
    expect(() => decodeMessage('Nope' as MessageName, new Uint8Array())).toThrow(/"Nope" is not a known message/);
  });
});

describe('repeated scalars (a test schema: Modal has none)', () => {
  const TEST_SCHEMA = {
    Numbers: {
      package: 'test',
      fields: {
        ints: { number: 1, type: 'int32', label: 'repeated' },
        zigzag: { number: 2, type: 'sint64', label: 'repeated' },
        kinds: { number: 3, type: 'Kind', label: 'repeated' },
        floats: { number: 4, type: 'float', label: 'repeated' },
        flags: { number: 5, type: 'bool', label: 'repeated' },
        fixed: { number: 6, type: 'fixed64', label: 'repeated' },
        single: { number: 7, type: 'sfixed32' },
        counts: { number: 8, type: 'map<uint32,double>' },
      },
    },
    Kind: { package: 'test', enum: { KIND_NONE: 0, KIND_A: 1 } },
  } as const satisfies Schema;
  const codec = createCodec(TEST_SCHEMA);

  it('are written packed, as proto3 does', () => {
    const bytes = codec.encode('Numbers', { ints: [1, -1, 300], zigzag: [-1, 1n], kinds: ['KIND_A', 'KIND_NONE', 7], flags: [true, false] });
    expect(hex(bytes)).toBe('0a0d01ffffffffffffffffff01ac02 12020102 1a03010007 2a020100'.replace(/ /g, ''));
    expect(codec.decode('Numbers', bytes)).toStrictEqual({ ints: [1, -1, 300], zigzag: [-1, 1], kinds: ['KIND_A', 'KIND_NONE', 7], flags: [true, false] });
  });

  it('are read unpacked, packed, or both mixed in one message', () => {
    const unpacked = unhex('0801 08ff ffffffffffffffff01 08ac02');
    expect(codec.decode('Numbers', unpacked)).toStrictEqual({ ints: [1, -1, 300] });
    const mixed = unhex('0801 0a03 0203 04 0805 1801 1a01 00 25 0000c03f 22 04 00002040');
    expect(codec.decode('Numbers', mixed)).toStrictEqual({ ints: [1, 2, 3, 4, 5], kinds: ['KIND_A', 'KIND_NONE'], floats: [1.5, 2.5] });
    const fixed = unhex('31 0000000000000080 3208 0100000000000000');
    expect(codec.decode('Numbers', fixed)).toStrictEqual({ fixed: [2n ** 63n, 1] });
  });

  it('leave a field absent for an empty packed run', () => {
    expect(codec.decode('Numbers', unhex('0a00'))).toStrictEqual({});
  });

  it('rejects a packed run cut in the middle of an element', () => {
    expect(() => codec.decode('Numbers', unhex('2203 0000c0'))).toThrow(/truncated: a 32-bit value .* Numbers\.floats \(field 4\)/);
  });

  it('handles sfixed32 and maps with integer keys', () => {
    const bytes = codec.encode('Numbers', { single: -2, counts: { '3': 0.5 } });
    expect(hex(bytes)).toBe('3dfeffffff 420b 0803 11000000000000e03f'.replace(/ /g, ''));
    expect(codec.decode('Numbers', bytes)).toStrictEqual({ single: -2, counts: { '3': 0.5 } });
    expect(() => codec.encode('Numbers', { counts: { x: 1 } })).toThrow(/Numbers\.counts\["x"\]: map key is not an integer for uint32/);
  });
});

describe('text format parser', () => {
  it('reads C escapes as bytes, octal and hex included', () => {
    expect(parseTextFormat('TaskExecStdioReadResponse', String.raw`data: "\303\251\x41\n\0" 'z'`)).toStrictEqual({
      data: new Uint8Array([0xc3, 0xa9, 0x41, 0x0a, 0x00, 0x7a]),
    });
    expect(parseTextFormat('AuthTokenGetResponse', String.raw`token: "caf\303\251 \"q\" \u00e9"`)).toStrictEqual({ token: 'café "q" é' });
  });

  it('reads lists, numbers in other bases, and enum numbers', () => {
    const parsed = parseTextFormat(
      'Sandbox',
      'entrypoint_args: ["a", "b"] timeout_secs: 0x10 idle_timeout_secs: 010 network_access < network_access_type: 2 >',
    );
    expect(parsed).toStrictEqual({ entrypoint_args: ['a', 'b'], timeout_secs: 16, idle_timeout_secs: 8, network_access: { network_access_type: 'BLOCKED' } });
    expect(parseTextFormat('TaskExecStdioReadRequest', 'offset: 18446744073709551615')).toStrictEqual({ offset: 2n ** 64n - 1n });
  });

  it('rejects fields set twice and unknown names', () => {
    expect(() => parseTextFormat('AuthTokenGetResponse', 'token: "a" token: "b"')).toThrow(/set twice/);
    expect(() => parseTextFormat('AuthTokenGetResponse', 'tokn: "a"')).toThrow(/no field tokn/);
    expect(() => parseTextFormat('GenericResult', 'status: NOPE')).toThrow(/NOPE is not a value/);
  });
});
