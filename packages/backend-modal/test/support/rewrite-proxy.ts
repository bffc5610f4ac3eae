// A gRPC proxy between berth and the simulator that rewrites the answers of chosen RPCs: how a
// test makes the simulator's answers say what only the real service says (e.g. a sandbox ended
// with GenericStatus 10, KERNEL_OOM_KILL) without changing the simulator. Everything else passes
// through untouched, streamed; a rewritten RPC's answer is read whole (unary only), each message
// given to `rewrite`. TLS from the same test CA the simulator uses, so the backend's `ca` fits both.
import { connect, createSecureServer, type ClientHttp2Session, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { testCa } from '@berth/test-support/test-ca';

export interface RewriteProxy {
  /** https://127.0.0.1:<port>: the serverUrl to give the backend. */
  url: string;
  close(): Promise<void>;
}

/** `rewrite(method, message)`: the message to send instead, for methods (RPC names) in `methods`. */
export async function rewriteProxy(
  target: string,
  methods: readonly string[],
  rewrite: (method: string, message: Buffer) => Uint8Array,
): Promise<RewriteProxy> {
  const { key, cert, ca } = testCa();
  let upstream: ClientHttp2Session | undefined;
  const session = () => {
    if (!upstream || upstream.closed || upstream.destroyed) upstream = connect(target, { ca });
    return upstream;
  };
  const server = createSecureServer({ key, cert });
  server.on('stream', (stream, headers) => {
    const path = String(headers[':path'] ?? '');
    const method = path.slice(path.lastIndexOf('/') + 1);
    const whole = methods.includes(method);
    const request = session().request(forwarded(headers));
    stream.pipe(request);
    stream.on('error', () => request.close());
    request.on('error', () => stream.close());
    let trailers: IncomingHttpHeaders | undefined;
    request.on('trailers', (t) => {
      trailers = t;
    });
    request.on('response', (response) => {
      const reply = forwarded(response);
      // A trailers-only answer (an error) carries its status here and nothing else.
      if (response['grpc-status'] !== undefined) {
        stream.respond(reply, { endStream: true });
        request.resume();
        return;
      }
      stream.respond(reply, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers(forwarded(trailers ?? { 'grpc-status': '0' })));
      if (!whole) {
        request.pipe(stream);
        return;
      }
      const chunks: Buffer[] = [];
      request.on('data', (c: Buffer) => chunks.push(c));
      request.on('end', () => stream.end(reframe(Buffer.concat(chunks), (m) => rewrite(method, m))));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      upstream?.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Headers to pass on: pseudo-headers node sets itself (and HTTP/1 connection headers) left out. */
function forwarded(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || name === ':authority' || name === ':scheme' || name === 'connection') continue;
    out[name] = value;
  }
  return out;
}

/** gRPC length-prefixed messages, each replaced by `change(message)`. */
function reframe(body: Buffer, change: (message: Buffer) => Uint8Array): Buffer {
  const out: Buffer[] = [];
  for (let at = 0; at + 5 <= body.length; ) {
    const length = body.readUInt32BE(at + 1);
    const message = Buffer.from(change(body.subarray(at + 5, at + 5 + length)));
    const head = Buffer.alloc(5);
    head.writeUInt32BE(message.length, 1);
    out.push(head, message);
    at += 5 + length;
  }
  return Buffer.concat(out);
}
