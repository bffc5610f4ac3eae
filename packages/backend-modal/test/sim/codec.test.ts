// Corners of the simulator's codec that protoc's golden vectors (checked in ../sim.test.ts) do not
// reach: unknown fields, merging, oneofs, negative varints, Any, malformed input.
import { describe, expect, it } from 'vitest';
import { ProtoError, SimCodec } from './codec.js';

const codec = SimCodec.load();
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const unhex = (t: string) => new Uint8Array(Buffer.from(t, 'hex'));

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
    const status = codec.encode('RPCStatus', { code: 8, message: 'slow down', details: [{ type_url: 'type.googleapis.com/modal.client.RPCRetryPolicy', value: policy }] });
    const back = codec.decode('RPCStatus', status) as { details: Array<{ value: Uint8Array }> };
    expect(back).toMatchObject({ code: 8, message: 'slow down', details: [{ type_url: 'type.googleapis.com/modal.client.RPCRetryPolicy' }] });
    expect(codec.decode('RPCRetryPolicy', back.details[0]?.value ?? new Uint8Array())).toStrictEqual({ retry_after_secs: 1.5 });
  });

  it('refuses truncated input and unknown enum names', () => {
    expect(() => codec.decode('SandboxTerminateRequest', unhex('0a05736232'))).toThrow(ProtoError);
    expect(() => codec.encode('TaskExecStartRequest', { stdout_config: 'NOPE' })).toThrow(ProtoError);
  });
});
