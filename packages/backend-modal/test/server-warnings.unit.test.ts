// Modal's x-modal-warning metadata (percent-encoded, one entry per warning, in the trailers or in
// the headers of a trailers-only error) surfaces once per text as a process warning with a code,
// secrets masked. Against a local node:http2 server: no engine needed.
import { createSecureServer, type Http2SecureServer, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { registerSecret } from '@berth/core/backend-kit';
import { SERVER_WARNING_CODE, serverWarning } from '../src/server-warnings.js';
import { GrpcTransport } from '../src/wire/index.js';
import { testCa } from '@berth/test-support/test-ca';

let reply: (stream: ServerHttp2Stream) => void;
let server: Http2SecureServer;
let origin: string;
const got: Array<{ text: string; path: string }> = [];
const transport = new GrpcTransport({ onWarning: (text, path) => got.push({ text, path }) });

beforeAll(async () => {
  const { key, cert } = testCa();
  server = createSecureServer({ key, cert });
  server.on('stream', (stream) => {
    stream.on('error', () => undefined);
    stream.resume();
    stream.on('end', () => reply(stream));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await transport.close();
  await new Promise((resolve) => server.close(resolve));
});
afterEach(() => {
  got.length = 0;
});

const endpoint = () => ({ origin, ca: testCa().ca });
const call = (path: string) => ({ path, metadata: {} });
const DEPRECATED = 'Version 1.1.0 of `modal` will be deprecated on March 01, 2027. Please upgrade, 100% sure.';

describe('x-modal-warning', () => {
  it('in the trailers of an OK answer, each entry percent-decoded', async () => {
    reply = (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () =>
        stream.sendTrailers({ 'grpc-status': '0', 'x-modal-warning': [encodeURIComponent(DEPRECATED), encodeURIComponent('second, notice')] }),
      );
      stream.end(Buffer.from([0, 0, 0, 0, 0]));
    };
    await transport.unary(endpoint(), call('/t.S/Ok'), new Uint8Array());
    expect(got).toEqual([
      { text: DEPRECATED, path: '/t.S/Ok' },
      { text: 'second, notice', path: '/t.S/Ok' },
    ]);
  });

  it('in the headers of a trailers-only error, beside the error', async () => {
    reply = (stream) =>
      stream.respond(
        {
          ':status': 200,
          'content-type': 'application/grpc',
          'grpc-status': '9',
          'grpc-message': 'too%20old',
          'x-modal-warning': encodeURIComponent(DEPRECATED),
        },
        { endStream: true },
      );
    await expect(transport.unary(endpoint(), call('/t.S/Refused'), new Uint8Array())).rejects.toMatchObject({ code: 9 });
    expect(got).toEqual([{ text: DEPRECATED, path: '/t.S/Refused' }]);
  });

  it('an answer without one reports none', async () => {
    reply = (stream) => stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '5' }, { endStream: true });
    await expect(transport.unary(endpoint(), call('/t.S/Missing'), new Uint8Array())).rejects.toMatchObject({ code: 5 });
    expect(got).toEqual([]);
  });
});

describe('serverWarning', () => {
  it('emits a process warning with its code once per text, the secrets berth knows masked', async () => {
    const warnings: Error[] = [];
    const listen = (w: Error) => warnings.push(w);
    process.on('warning', listen);
    try {
      registerSecret('as-very-secret-token');
      const text = `unique ${Date.now()}: token as-very-secret-token is old`;
      serverWarning(text);
      serverWarning(text);
      serverWarning(`  ${text}  `);
      serverWarning('');
      // process.emitWarning is delivered on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', listen);
    }
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({
      code: SERVER_WARNING_CODE,
      message: expect.stringMatching(/^Modal's server warns: unique \d+: token \[REDACTED\] is old$/),
    });
  });
});
