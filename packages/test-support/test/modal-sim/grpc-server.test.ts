// The simulator's gRPC server at the TLS level, without Docker: clients that offer ALPN h2, and
// clients that offer no ALPN at all (as the Python SDK's router client does for 127.0.0.1), get
// HTTP/2; a client that offers only http/1.1 is dropped.
import { once } from 'node:events';
import { connect as h2connect } from 'node:http2';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testCa } from '../../src/test-ca.js';
import { SimCodec } from '../../src/modal-sim/codec.js';
import { GrpcServer } from '../../src/modal-sim/grpc-server.js';
import { MethodTable } from '../../src/modal-sim/methods.js';
import { RawClient } from '../../src/modal-sim/raw-client.js';

const codec = SimCodec.forSimulator();
let server: GrpcServer;

beforeAll(async () => {
  const table = new MethodTable('modal.client.ModalClient', 'modal.client');
  table.unary('ClientHello', () => ({ warning: 'hello' }), { request: 'google.protobuf.Empty' });
  const { key, cert } = testCa();
  server = await GrpcServer.start({ key, cert, codec, methods: table.methods, before: () => undefined, onCall: () => undefined });
});

afterAll(async () => {
  await server?.close();
});

const port = () => Number(new URL(server.url).port);

function tls(alpn?: string[]): Promise<TLSSocket> {
  const socket = tlsConnect({ host: '127.0.0.1', port: port(), ca: testCa().ca, ...(alpn ? { ALPNProtocols: alpn } : {}) });
  return new Promise((resolve, reject) => {
    socket.once('secureConnect', () => resolve(socket));
    socket.once('error', reject);
  });
}

describe('TLS and ALPN', () => {
  it('serves a client that offers ALPN h2', async () => {
    const client = new RawClient(server.url, testCa().ca, codec);
    const r = await client.call('/modal.client.ModalClient/ClientHello', 'google.protobuf.Empty', 'modal.client.ClientHelloResponse', {});
    client.close();
    expect({ code: r.code, messages: r.messages }).toStrictEqual({ code: 0, messages: [{ warning: 'hello' }] });
  });

  it('serves HTTP/2 to a client that offers no ALPN, on calls after the first too', async () => {
    const socket = await tls();
    expect(socket.alpnProtocol).toBe(false);
    const session = h2connect(server.url, { createConnection: () => socket });
    session.on('error', () => undefined);
    const client = Object.assign(new RawClient(server.url, testCa().ca, codec), { session: () => session });
    for (let i = 0; i < 3; i++) {
      const r = await client.call('/modal.client.ModalClient/ClientHello', 'google.protobuf.Empty', 'modal.client.ClientHelloResponse', {});
      expect({ code: r.code, messages: r.messages }).toStrictEqual({ code: 0, messages: [{ warning: 'hello' }] });
    }
    session.close();
  });

  it('drops a client that offers only http/1.1', async () => {
    const socket = await tls(['http/1.1']).catch((error: Error) => error);
    if (socket instanceof Error) return void expect(socket.message).toMatch(/alpn|protocol|socket/i);
    const received: Buffer[] = [];
    socket.on('data', (c: Buffer) => received.push(c));
    socket.on('error', () => undefined);
    socket.write('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    await once(socket, 'close');
    expect(Buffer.concat(received).toString()).toBe('');
  });
});
