// Corners of the simulator's codec that protoc's golden vectors (checked in ../sim.test.ts) do not
// reach: unknown fields, merging, oneofs, negative varints, Any, types fields.json does not define,
// malformed input.
import { describe, expect, it } from 'vitest';
import { ProtoError, SimCodec } from '../../src/modal-sim/codec.js';

const codec = SimCodec.load();
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const unhex = (t: string) => new Uint8Array(Buffer.from(t.replace(/\s+/g, ''), 'hex'));

describe('simulator codec', () => {
  it('skips unknown fields, merges a message seen twice, keeps the last oneof member', () => {
    const oneof = unhex('08031009'); // code: 3 then signal: 9
    expect(codec.decode('TaskExecWaitResponse', oneof)).toStrictEqual({ signal: 9 });
    const unknown = unhex('f8010a0a0573622d3737'); // field 31 varint 10, then sandbox_id
    expect(codec.decode('SandboxTerminateRequest', unknown)).toStrictEqual({ sandbox_id: 'sb-77' });
    const merged = unhex('0a0208020a021801'); // result{status:2} result{exitcode:1}
    expect(codec.decode('SandboxWaitResponse', merged)).toStrictEqual({ result: { status: 'GENERIC_STATUS_FAILURE', exitcode: 1 } });
  });

  it('writes negative int32 as ten bytes, and reads them back', () => {
    const bytes = codec.encode('TaskExecWaitResponse', { code: -1 });
    expect(hex(bytes)).toBe('08ffffffffffffffffff01');
    expect(codec.decode('TaskExecWaitResponse', bytes)).toStrictEqual({ code: -1 });
  });

  it('encodes google.protobuf.Any inside RPCStatus, the retry hint of a rate limit', () => {
    const policy = codec.encode('RPCRetryPolicy', { retry_after_secs: 1.5 });
    const status = codec.encode('RPCStatus', {
      code: 8,
      message: 'slow down',
      details: [{ type_url: 'type.googleapis.com/modal.client.RPCRetryPolicy', value: policy }],
    });
    const back = codec.decode('RPCStatus', status) as { details: Array<{ value: Uint8Array }> };
    expect(back).toMatchObject({ code: 8, message: 'slow down', details: [{ type_url: 'type.googleapis.com/modal.client.RPCRetryPolicy' }] });
    expect(codec.decode('RPCRetryPolicy', back.details[0]?.value ?? new Uint8Array())).toStrictEqual({ retry_after_secs: 1.5 });
  });

  it('decodes a type fields.json does not define by the wire type that arrives: varint an enum, length-delimited a message', () => {
    // ImageGetOrCreateRequest as Modal's Python SDK sends it: namespace (field 8, DeploymentNamespace,
    // not defined in fields.json) = DEPLOYMENT_NAMESPACE_WORKSPACE (1), then builder_version "2025.06".
    // Read as length-delimited, the 01 was a length that swallowed builder_version's tag, and its
    // length 07 then read as a tag: field 0, wire type 7.
    const sdk = unhex('2204 61702d31 4001 4a07 323032352e3036');
    expect(codec.decode('ImageGetOrCreateRequest', sdk)).toStrictEqual({ app_id: 'ap-1', namespace: 1, builder_version: '2025.06' });
    expect(hex(codec.encode('ImageGetOrCreateRequest', { app_id: 'ap-1', namespace: 1, builder_version: '2025.06' }))).toBe(hex(sdk));
    expect(hex(codec.encode('ImageGetOrCreateRequest', { namespace: 0 }))).toBe(''); // an enum's zero is its default
    expect(codec.decode('ImageGetOrCreateRequest', unhex('40ffffffffffffffffff01'))).toStrictEqual({ namespace: -1 }); // int32, as enums are
    // Sandbox.cloud_provider (field 6) is an enum, Sandbox.open_ports (field 20) a message; neither is defined.
    expect(codec.decode('Sandbox', unhex('3002 a201020801'))).toStrictEqual({ cloud_provider: 2, open_ports: unhex('0801') });
    // Sandbox.pty_info (field 15) is defined (exec takes a terminal): a message.
    expect(codec.decode('Sandbox', unhex('7a020801'))).toStrictEqual({ pty_info: { enabled: true } });
    expect(() => codec.decode('Sandbox', unhex('3502000000'))).toThrow(/wire type 5 for CloudProvider, which fields\.json does not define/);
  });

  it('skips unknown fields of every wire type, and names an invalid one', () => {
    const unknown = unhex('f80196 01 f901 0102030405060708 fa01 03616263 fd01 01020304'); // fields 31: varint, fixed64, bytes, fixed32
    expect(codec.decode('SandboxTerminateRequest', unhex(`${hex(unknown)}0a0573622d3737`))).toStrictEqual({ sandbox_id: 'sb-77' });
    expect(() => codec.decode('SandboxTerminateRequest', unhex('fb01'))).toThrow(
      /field 31 of modal\.client\.SandboxTerminateRequest at byte 0: wire type 3 is a group/,
    );
    expect(() => codec.decode('SandboxTerminateRequest', unhex('0a0173 ff01'))).toThrow(/field 31 .* at byte 3: wire type 7 is not a protobuf wire type/);
    expect(() => codec.decode('SandboxTerminateRequest', unhex('07'))).toThrow(/invalid tag 7 at byte 0 .*field number 0/);
    expect(() => codec.decode('TaskExecStartRequest', unhex('220101'))).toThrow(/wire type 2 for the enum modal\.task_command_router\.TaskExecStdoutConfig/); // stdout_config
  });

  it('refuses truncated input and unknown enum names', () => {
    expect(() => codec.decode('SandboxTerminateRequest', unhex('0a05736232'))).toThrow(ProtoError);
    expect(() => codec.encode('TaskExecStartRequest', { stdout_config: 'NOPE' })).toThrow(ProtoError);
  });
});
