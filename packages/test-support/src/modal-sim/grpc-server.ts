// gRPC over node:http2 with TLS, as Modal serves it: length-prefixed messages, status in trailers,
// errors before any message as trailers-only answers, and grpc-timeout honoured. Handlers get a
// decoded request and an AbortSignal that fires when the client goes away.
import { once, setMaxListeners } from 'node:events';
import {
  constants,
  createSecureServer,
  type Http2SecureServer,
  type Http2Session,
  type IncomingHttpHeaders,
  performServerHandshake,
  type ServerHttp2Stream,
} from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Msg, SimCodec } from './codec.js';

export const Code = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    /** A serialized google.rpc.Status for grpc-status-details-bin. */
    readonly details?: Uint8Array,
  ) {
    super(message);
  }
}

export interface CallContext {
  path: string;
  /** The RPC's name, the last part of the path. */
  method: string;
  headers: IncomingHttpHeaders;
  /** Fires when the client cancels, the stream is reset or the simulator closes. */
  signal: AbortSignal;
  /** When the client's grpc-timeout runs out (epoch ms), Infinity without one. */
  deadline: number;
  idempotencyKey?: string;
  /** The request as it came, for idempotency checks. */
  raw: Uint8Array;
  /** The HTTP/2 stream itself: faults act on the transport. */
  stream: ServerHttp2Stream;
  /** Extra trailing metadata for the answer, OK or not (e.g. x-modal-warning); ASCII values. */
  trailers: Record<string, string>;
}

export interface Method {
  request: string;
  response: string;
  unary?: (req: Msg, ctx: CallContext) => Promise<Msg>;
  stream?: (req: Msg, ctx: CallContext, send: (m: Msg) => Promise<void>) => Promise<void>;
}

export interface CallRecord {
  path: string;
  code: number;
  idempotencyKey?: string;
  /** Set when the stream was reset rather than ended with a status. */
  reset?: true;
  /** x-modal-client-type and x-modal-client-version as the client sent them (Modal's SDKs send both). */
  clientType?: string;
  clientVersion?: string;
}

export interface GrpcServerOptions {
  key: string;
  cert: string;
  codec: SimCodec;
  methods: Map<string, Method>;
  /** Runs before the handler (faults, authentication); throw an RpcError to answer with it. */
  before: (ctx: CallContext) => Promise<void> | void;
  onCall: (record: CallRecord) => void;
}

const TIMEOUT_UNITS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 1e-3, n: 1e-6 };

/** grpc-message is percent-encoded UTF-8: everything outside printable ASCII, and '%' itself. */
export function percentEncode(text: string): string {
  return [...Buffer.from(text, 'utf8')]
    .map((b) => (b >= 0x20 && b <= 0x7e && b !== 0x25 ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`))
    .join('');
}

export function frame(message: Uint8Array): Buffer {
  const out = Buffer.alloc(5 + message.length);
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}

export class GrpcServer {
  readonly url: string;
  readonly #server: Http2SecureServer;
  readonly #sessions = new Set<Http2Session>();
  readonly #streams = new Set<ServerHttp2Stream>();
  /** Connections (HTTP/2 sessions) accepted so far: a client that reconnected after a GOAWAY shows here. */
  sessionsOpened = 0;
  /** One listener per stream in flight (removed as each ends): many at once is load, not a leak. */
  readonly #closing = (() => {
    const controller = new AbortController();
    setMaxListeners(0, controller.signal);
    return controller;
  })();

  private constructor(
    server: Http2SecureServer,
    readonly options: GrpcServerOptions,
  ) {
    this.#server = server;
    this.url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  static async start(options: GrpcServerOptions): Promise<GrpcServer> {
    const server = createSecureServer({ key: options.key, cert: options.cert, allowHTTP1: false });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    const self = new GrpcServer(server, options);
    // A client that breaks off its TLS handshake is its own business, not a crash of the simulator.
    server.on('error', () => undefined);
    server.on('tlsClientError', () => undefined);
    server.on('session', (session) => self.#adopt(session));
    server.on('stream', (stream, headers) => void self.#serve(stream, headers));
    // A TLS client that offers no ALPN at all speaks HTTP/2 all the same: the Python SDK's router
    // client (an unverified SSLContext without set_alpn_protocols, used for 127.0.0.1/localhost),
    // which real Modal serves. Node's server would answer it with an HTTP/1.0 403. A client that
    // offered http/1.1 only is not speaking gRPC and is dropped.
    server.on('unknownProtocol', (socket) => {
      if ((socket as TLSSocket).alpnProtocol !== false) return void socket.destroy();
      const session = performServerHandshake(socket);
      self.#adopt(session);
      session.on('stream', (stream, headers) => void self.#serve(stream, headers));
    });
    return self;
  }

  #adopt(session: Http2Session): void {
    this.sessionsOpened++;
    this.#sessions.add(session);
    session.on('close', () => this.#sessions.delete(session));
    session.on('error', () => undefined);
  }

  /** Reset every stream in flight with RST_STREAM (INTERNAL_ERROR); returns how many it reset. */
  resetStreams(): number {
    let reset = 0;
    for (const stream of this.#streams) {
      if (stream.closed) continue;
      stream.close(constants.NGHTTP2_INTERNAL_ERROR);
      reset++;
    }
    return reset;
  }

  /** GOAWAY on every connection: calls in flight finish, new ones need a new connection. Returns the calls in flight then. */
  goaway(): number {
    const inFlight = [...this.#streams].filter((s) => !s.closed).length;
    for (const session of this.#sessions) if (!session.closed) session.close();
    return inFlight;
  }

  async close(): Promise<void> {
    this.#closing.abort();
    for (const session of this.#sessions) session.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  async #serve(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): Promise<void> {
    this.#streams.add(stream);
    const path = String(headers[':path'] ?? '');
    const key = headers['x-idempotency-key'];
    const record: CallRecord = { path, code: Code.OK, ...(typeof key === 'string' ? { idempotencyKey: key } : {}) };
    const { 'x-modal-client-type': clientType, 'x-modal-client-version': clientVersion } = headers;
    if (typeof clientType === 'string') record.clientType = clientType;
    if (typeof clientVersion === 'string') record.clientVersion = clientVersion;
    const abort = new AbortController();
    const onClose = () => abort.abort(new Error('stream closed'));
    stream.on('close', onClose);
    stream.on('error', () => undefined);
    const stopOnClose = () => abort.abort(new Error('simulator closing'));
    this.#closing.signal.addEventListener('abort', stopOnClose);
    let headersSent = false;
    const extraTrailers: Record<string, string> = {};
    const respondHeaders = () => {
      if (headersSent) return;
      headersSent = true;
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    };
    const finish = (code: number, message = '', details?: Uint8Array) => {
      record.code = code;
      if (stream.closed || stream.destroyed) {
        record.reset = true;
        if (code === Code.OK) record.code = Code.INTERNAL;
        return;
      }
      const status: Record<string, string> = { ...extraTrailers, 'grpc-status': String(code) };
      if (message) status['grpc-message'] = percentEncode(message);
      if (details) status['grpc-status-details-bin'] = Buffer.from(details).toString('base64').replace(/=+$/, '');
      if (!headersSent) {
        headersSent = true;
        stream.respond({ ':status': 200, 'content-type': 'application/grpc', ...status }, { endStream: true });
      } else {
        stream.once('wantTrailers', () => stream.sendTrailers(status));
        stream.end();
      }
    };
    try {
      const body = await readBody(stream);
      const method = this.options.methods.get(path);
      if (!method) throw new RpcError(Code.UNIMPLEMENTED, `Method ${path} is not implemented by the simulator`);
      const raw = singleMessage(body);
      const ctx: CallContext = {
        path,
        method: path.split('/').pop() ?? '',
        headers,
        signal: abort.signal,
        deadline: deadlineOf(headers),
        raw,
        stream,
        trailers: extraTrailers,
      };
      if (record.idempotencyKey !== undefined) ctx.idempotencyKey = record.idempotencyKey;
      await this.options.before(ctx);
      let request: Msg;
      try {
        request = this.options.codec.decode(method.request, raw);
      } catch (error) {
        throw new RpcError(Code.INTERNAL, `could not decode ${method.request}: ${(error as Error).message}`);
      }
      const send = async (m: Msg) => {
        if (stream.closed || stream.destroyed) throw new RpcError(Code.CANCELLED, 'stream closed');
        respondHeaders();
        if (!stream.write(frame(this.options.codec.encode(method.response, m)))) await drained(stream);
      };
      if (method.unary) {
        const response = await method.unary(request, ctx);
        await send(response);
      } else if (method.stream) {
        await method.stream(request, ctx, send);
      }
      finish(Code.OK);
    } catch (error) {
      if (error instanceof RpcError) finish(error.code, error.message, error.details);
      else finish(Code.INTERNAL, `simulator error: ${(error as Error).message}`);
    } finally {
      this.#streams.delete(stream);
      stream.off('close', onClose);
      this.#closing.signal.removeEventListener('abort', stopOnClose);
      this.options.onCall(record);
    }
  }
}

async function readBody(stream: ServerHttp2Stream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  stream.on('data', (c: Buffer) => chunks.push(c));
  await new Promise<void>((resolve, reject) => {
    stream.once('end', resolve);
    stream.once('close', () => reject(new RpcError(Code.CANCELLED, 'the client went away before sending its request')));
  });
  return Buffer.concat(chunks);
}

/** Unary and server-streaming calls carry exactly one request message. */
function singleMessage(body: Buffer): Uint8Array {
  if (body.length < 5) throw new RpcError(Code.INTERNAL, 'no request message');
  if (body[0] !== 0) throw new RpcError(Code.UNIMPLEMENTED, 'compressed messages are not supported by the simulator');
  const length = body.readUInt32BE(1);
  if (body.length !== 5 + length) throw new RpcError(Code.INTERNAL, `expected one message of ${length} bytes, got ${body.length - 5}`);
  return new Uint8Array(body.subarray(5));
}

function deadlineOf(headers: IncomingHttpHeaders): number {
  const m = /^(\d{1,8})([HMSmun])$/.exec(String(headers['grpc-timeout'] ?? ''));
  return m ? Date.now() + Number(m[1]) * (TIMEOUT_UNITS[m[2] as string] ?? 1) : Infinity;
}

async function drained(stream: ServerHttp2Stream): Promise<void> {
  const ac = new AbortController();
  try {
    await Promise.race([once(stream, 'drain', { signal: ac.signal }), once(stream, 'close', { signal: ac.signal })]);
  } finally {
    ac.abort();
  }
  if (stream.closed || stream.destroyed) throw new RpcError(Code.CANCELLED, 'stream closed');
}
