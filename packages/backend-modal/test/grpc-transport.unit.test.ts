// gRPC over undici's HTTP/2 against a node:http2 server with TLS from a test CA: status from
// trailers and from trailers-only answers, percent-encoded messages, retry hints, server streams,
// and streams cut on the way. Also the reason the transport uses dispatch(): request() loses trailers.
import { getEventListeners } from 'node:events';
import { createSecureServer, type Http2SecureServer, type ServerHttp2Stream, type IncomingHttpHeaders } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { Client } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCodec } from '../src/wire/protobuf.js';
import { GrpcError, GRPC_CODE } from '../src/wire/grpc-status.js';
import { GrpcTransport } from '../src/wire/grpc.js';
import { testCa } from '@berth/test-support/test-ca';

type Route = (stream: ServerHttp2Stream, request: Buffer, headers: IncomingHttpHeaders) => void;
const routes = new Map<string, Route>();
let server: Http2SecureServer;
let origin: string;
const transport = new GrpcTransport();

const frame = (message: Uint8Array) => {
  const out = Buffer.alloc(5 + message.length);
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
};

/** Answer with these messages, then trailers. */
function answer(stream: ServerHttp2Stream, messages: Uint8Array[], trailers: Record<string, string> = { 'grpc-status': '0' }) {
  stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
  stream.on('wantTrailers', () => stream.sendTrailers(trailers));
  for (const m of messages) stream.write(frame(m));
  stream.end();
}

beforeAll(async () => {
  const { key, cert } = testCa();
  server = createSecureServer({ key, cert });
  server.on('stream', (stream, headers) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('error', () => undefined);
    stream.on('end', () => routes.get(String(headers[':path']))?.(stream, Buffer.concat(chunks), headers));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await transport.close();
  await new Promise((resolve) => server.close(resolve));
});

const endpoint = () => ({ origin, ca: testCa().ca });
const call = (path: string, extra: Partial<{ idleTimeoutMs: number; signal: AbortSignal }> = {}) => ({ path, metadata: { 'x-test': 'yes' }, ...extra });
const failure = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

describe('GrpcTransport over undici HTTP/2', () => {
  it('a unary call: the framed request arrives with gRPC headers, the message and OK trailers come back', async () => {
    let seen: { body?: Buffer; headers?: IncomingHttpHeaders } = {};
    routes.set('/t.S/Echo', (stream, body, headers) => {
      seen = { body, headers };
      answer(stream, [body.subarray(5)]);
    });
    const out = await transport.unary(endpoint(), call('/t.S/Echo'), Buffer.from('hello'));
    expect(Buffer.from(out).toString()).toBe('hello');
    expect(seen.body?.subarray(0, 5)).toEqual(Buffer.from([0, 0, 0, 0, 5]));
    expect(seen.headers).toMatchObject({ 'content-type': 'application/grpc', te: 'trailers', 'x-test': 'yes' });
  });

  it('a trailers-only error: the code, and the message percent-decoded', async () => {
    routes.set('/t.S/Missing', (stream) => {
      stream.respond(
        { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '5', 'grpc-message': 'Sandbox%20sb-1%20not%20found%20%E2%9C%97' },
        { endStream: true },
      );
    });
    const error = await failure(transport.unary(endpoint(), call('/t.S/Missing'), new Uint8Array()));
    expect(GrpcError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: GRPC_CODE.NOT_FOUND, details: 'Sandbox sb-1 not found ✗', transport: false });
  });

  it("RESOURCE_EXHAUSTED carries the server's retry hint from grpc-status-details-bin", async () => {
    const codec = createCodec({
      Any: { package: 'berth.wire', fields: { type_url: { number: 1, type: 'string' }, value: { number: 2, type: 'bytes' } } },
      Status: {
        package: 'berth.wire',
        fields: { code: { number: 1, type: 'int32' }, message: { number: 2, type: 'string' }, details: { number: 3, type: 'Any', label: 'repeated' } },
      },
      RetryPolicy: { package: 'berth.wire', fields: { retry_after_secs: { number: 1, type: 'float' } } },
    } as const);
    const policy = codec.encode('RetryPolicy', { retry_after_secs: 1.5 });
    const status = codec.encode('Status', {
      code: 8,
      message: 'rate limit',
      details: [{ type_url: 'type.googleapis.com/modal.client.RPCRetryPolicy', value: policy }],
    });
    routes.set('/t.S/Limited', (stream) =>
      answer(stream, [], {
        'grpc-status': '8',
        'grpc-message': 'Sandbox creation rate limit exceeded',
        'grpc-status-details-bin': Buffer.from(status).toString('base64').replace(/=+$/, ''),
      }),
    );
    const error = await failure(transport.unary(endpoint(), call('/t.S/Limited'), new Uint8Array()));
    expect(error).toMatchObject({ code: GRPC_CODE.RESOURCE_EXHAUSTED, retryAfterMs: 1500 });
  });

  it('a server stream: every message in order, messages split across DATA frames and several in one', async () => {
    routes.set('/t.S/Stream', (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      const all = Buffer.concat([frame(Buffer.from('one')), frame(Buffer.alloc(100_000, 7)), frame(Buffer.from('three'))]);
      stream.write(all.subarray(0, 3));
      stream.write(all.subarray(3, 50_000));
      stream.end(all.subarray(50_000));
    });
    const got: Buffer[] = [];
    for await (const m of transport.stream(endpoint(), call('/t.S/Stream'), new Uint8Array())) got.push(Buffer.from(m));
    expect(got.map((m) => m.length)).toEqual([3, 100_000, 5]);
    expect(got[2]?.toString()).toBe('three');
  });

  it('a stream reset mid-way (RST_STREAM) is UNAVAILABLE from the transport, after the messages that did arrive', async () => {
    routes.set('/t.S/Cut', (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
      stream.write(frame(Buffer.from('first')), () => setTimeout(() => stream.close(0x2), 20));
    });
    const got: string[] = [];
    const error = await failure(
      (async () => {
        for await (const m of transport.stream(endpoint(), call('/t.S/Cut'), new Uint8Array())) got.push(Buffer.from(m).toString());
      })(),
    );
    expect(got).toEqual(['first']);
    expect(error).toMatchObject({ code: GRPC_CODE.UNAVAILABLE, transport: true });
  });

  it('a call with nothing arriving for idleTimeoutMs ends as UNAVAILABLE; an abort ends it at once', async () => {
    routes.set('/t.S/Silent', () => undefined);
    const idle = await failure(transport.unary(endpoint(), call('/t.S/Silent', { idleTimeoutMs: 200 }), new Uint8Array()));
    expect(idle).toMatchObject({ code: GRPC_CODE.UNAVAILABLE });
    const controller = new AbortController();
    const pending = failure(transport.unary(endpoint(), call('/t.S/Silent', { signal: controller.signal }), new Uint8Array()));
    controller.abort(new Error('caller gave up'));
    expect(String(await pending)).toContain('caller gave up');
  });

  it('calls under one long-lived signal leave no listener on it once they end: answered, failed, or a stream stopped early', async () => {
    routes.set('/t.S/Echo', (stream, body) => answer(stream, [body.subarray(5)]));
    routes.set('/t.S/Missing', (stream) => stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '5' }, { endStream: true }));
    routes.set('/t.S/Two', (stream) => answer(stream, [Buffer.from('a'), Buffer.from('b')]));
    const run = new AbortController();
    const listeners = () => getEventListeners(run.signal, 'abort').length;
    await transport.unary(endpoint(), call('/t.S/Echo', { signal: run.signal }), Buffer.from('x'));
    await failure(transport.unary(endpoint(), call('/t.S/Missing', { signal: run.signal }), new Uint8Array()));
    for await (const first of transport.stream(endpoint(), call('/t.S/Two', { signal: run.signal }), new Uint8Array())) {
      expect(listeners()).toBe(1);
      expect(Buffer.from(first).toString()).toBe('a');
      break;
    }
    expect(listeners()).toBe(0);
  });

  it("why dispatch(): undici's request() API loses HTTP/2 trailers, so grpc-status would never be seen", async () => {
    routes.set('/t.S/Trailers', (stream) => answer(stream, [Buffer.from('x')], { 'grpc-status': '3', 'grpc-message': 'bad' }));
    const client = new Client(origin, { allowH2: true, connect: { ca: testCa().ca } });
    try {
      const res = await client.request({
        path: '/t.S/Trailers',
        method: 'POST',
        headers: { 'content-type': 'application/grpc', te: 'trailers' },
        body: frame(new Uint8Array()),
      });
      await res.body.arrayBuffer();
      expect(res.trailers['grpc-status']).toBeUndefined();
    } finally {
      await client.close();
    }
    // The same answer through the transport: the status is there.
    await expect(transport.unary(endpoint(), call('/t.S/Trailers'), new Uint8Array())).rejects.toMatchObject({
      code: GRPC_CODE.INVALID_ARGUMENT,
      details: 'bad',
    });
  });
});
