// Requests built byte by byte the way Modal's own Python SDK sends them, sent to the simulator over
// its real gRPC path (HTTP/2 + TLS on 127.0.0.1). The simulator must read what Modal's clients send,
// not only what berth's codec writes: berth never sends ImageGetOrCreateRequest.namespace, the SDK
// sends it on every image request. Needs the Docker engine and berth-test/busybox:latest.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness } from '@berth/test-support/modal-sim/harness';
import { ModalSimulator } from '@berth/test-support/modal-sim';

const BUSYBOX = 'berth-test/busybox:latest';

let sim: ModalSimulator;
let h: Harness;
let appId: string;

beforeAll(async () => {
  sim = await ModalSimulator.start({ longPollMs: 2000 });
  h = new Harness(sim);
  appId = await h.app('berth-sim-sdk-requests');
});

afterAll(async () => {
  h?.close();
  await sim?.close();
});

// Protobuf by hand, so no codec of this repository (and no reading of fields.json) is involved.
function varint(n: number): number[] {
  const out: number[] = [];
  let v = n;
  while (v > 0x7f) {
    out.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  out.push(v);
  return out;
}
const lengthDelimited = (field: number, body: Uint8Array | string): number[] => {
  const bytes = typeof body === 'string' ? [...Buffer.from(body)] : [...body];
  return [...varint((field << 3) | 2), ...varint(bytes.length), ...bytes];
};
const varintField = (field: number, value: number): number[] => [...varint(field << 3), ...varint(value)];
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

/** api.proto (modal-client): DeploymentNamespace, which fields.json names but does not define. */
const DEPLOYMENT_NAMESPACE_WORKSPACE = 1;

/**
 * ImageGetOrCreateRequest as modal/image.py's _Image._load builds it for Image.from_registry(ref)
 * without a secret, serialized the way Python's protobuf does (fields in number order, proto3
 * defaults left out, sub-messages set in the constructor written even when empty):
 * Image{dockerfile_commands: 6, gpu_config: 16 = GPUConfig(), image_registry_config: 17 =
 * ImageRegistryConfig(REGISTRY_AUTH_TYPE_UNSPECIFIED)}, app_id: 4, namespace: 8 =
 * DEPLOYMENT_NAMESPACE_WORKSPACE (the default of _Image._load's _namespace), builder_version: 9.
 */
function sdkImageGetOrCreate(app: string, commands: string[], builderVersion = '2025.06'): Uint8Array {
  const empty = new Uint8Array();
  const image = [...commands.flatMap((c) => lengthDelimited(6, c)), ...lengthDelimited(16, empty), ...lengthDelimited(17, empty)];
  return new Uint8Array([
    ...lengthDelimited(2, new Uint8Array(image)),
    ...lengthDelimited(4, app),
    ...varintField(8, DEPLOYMENT_NAMESPACE_WORKSPACE),
    ...lengthDelimited(9, builderVersion),
  ]);
}

describe("requests as Modal's Python SDK sends them", () => {
  it('ImageGetOrCreate with namespace = DEPLOYMENT_NAMESPACE_WORKSPACE (a varint of a type fields.json does not define) is answered, and the image builds', async () => {
    const request = sdkImageGetOrCreate(appId, [`FROM ${BUSYBOX}`]);
    // namespace (field 8, varint 1) right before builder_version (field 9, "2025.06"): the bytes
    // the simulator once read as a length-delimited namespace and then failed on ("cannot skip wire type 7").
    expect(hex(request)).toContain(`40014a07${Buffer.from('2025.06').toString('hex')}`);

    const r = await h.cp('ImageGetOrCreate', request);
    expect({ code: r.code, message: r.message }).toStrictEqual({ code: 0, message: '' });
    const imageId = String(r.messages[0]?.image_id ?? '');
    expect(imageId).toMatch(/^im-/);
    expect(sim.calls.filter((c) => c.path.endsWith('/ImageGetOrCreate')).map((c) => c.code)).toStrictEqual([0]);

    const { result } = await h.join(imageId);
    expect(result).toMatchObject({ status: 'GENERIC_STATUS_SUCCESS' });

    // Asked for the way berth asks (no namespace), it is the same image: the SDK's Image was read
    // as berth's is.
    expect(await h.ok('ImageGetOrCreate', { app_id: appId, image: { dockerfile_commands: [`FROM ${BUSYBOX}`] } })).toMatchObject({ image_id: imageId });
  });
});
