// A minimal gRPC client for driving the simulator in tests: node:http2, the simulator's codec, and
// every detail of the answer (status from trailers or a trailers-only answer, resets, GOAWAY).
import { connect, constants, type ClientHttp2Session, type IncomingHttpHeaders } from 'node:http2';
import type { Msg, SimCodec } from './codec.js';
import { frame } from './grpc-server.js';

export interface CallResult {
  /** The gRPC status, or -1 when the stream was reset before one came. */
  code: number;
  message: string;
  messages: Msg[];
  /** The raw grpc-status-details-bin, decoded from base64. */
  details?: Buffer;
  headers: IncomingHttpHeaders;
  trailers: IncomingHttpHeaders;
  /** Status came in the response headers, with no body. */
  trailersOnly: boolean;
  /** RST_STREAM code when the stream was reset. */
  rstCode?: number;
  ms: number;
}

export class RawClient {
  #session?: ClientHttp2Session;
  /** GOAWAYs this client's connections received. */
  goaways = 0;

  constructor(
    readonly origin: string,
    readonly ca: string,
    readonly codec: SimCodec,
    readonly metadata: Record<string, string> = {},
  ) {}

  /** A live connection; a new one after GOAWAY or close. */
  session(): ClientHttp2Session {
    if (!this.#session || this.#session.closed || this.#session.destroyed) {
      const session = connect(this.origin, { ca: this.ca });
      session.on('goaway', () => {
        this.goaways++;
        if (this.#session === session) this.#session = undefined;
      });
      session.on('error', () => undefined);
      this.#session = session;
    }
    return this.#session;
  }

  /** Calls with `msg` encoded as `request`, or with bytes as given (built by hand, as another client sends them). */
  call(path: string, request: string, response: string, msg: Msg | Uint8Array, headers: Record<string, string> = {}): Promise<CallResult> {
    const started = Date.now();
    const req = this.session().request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers', ...this.metadata, ...headers });
    req.end(frame(msg instanceof Uint8Array ? msg : this.codec.encode(request, msg)));
    return new Promise((resolve) => {
      let head: IncomingHttpHeaders = {};
      let trailers: IncomingHttpHeaders = {};
      const chunks: Buffer[] = [];
      req.on('response', (h) => (head = h));
      req.on('trailers', (t) => (trailers = t));
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('error', () => undefined);
      req.on('close', () => {
        const body = Buffer.concat(chunks);
        const status = trailers['grpc-status'] ?? head['grpc-status'];
        const messages: Msg[] = [];
        for (let at = 0; at + 5 <= body.length; ) {
          const len = body.readUInt32BE(at + 1);
          if (at + 5 + len > body.length) break;
          messages.push(this.codec.decode(response, body.subarray(at + 5, at + 5 + len)));
          at += 5 + len;
        }
        const details = trailers['grpc-status-details-bin'] ?? head['grpc-status-details-bin'];
        const reset = req.rstCode !== undefined && req.rstCode !== constants.NGHTTP2_NO_ERROR;
        resolve({
          code: status === undefined ? -1 : Number(status),
          message: decodeURIComponent(String(trailers['grpc-message'] ?? head['grpc-message'] ?? '')),
          messages,
          ...(details ? { details: Buffer.from(String(details), 'base64') } : {}),
          headers: head,
          trailers,
          trailersOnly: trailers['grpc-status'] === undefined && head['grpc-status'] !== undefined,
          ...(reset ? { rstCode: req.rstCode } : {}),
          ms: Date.now() - started,
        });
      });
    });
  }

  close(): void {
    this.#session?.close();
  }
}
