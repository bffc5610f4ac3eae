// gRPC over HTTP/2 with undici alone: unary calls and server streams, status from trailers (or
// from the headers of a trailers-only answer), retry hints from grpc-status-details-bin.
//
// undici 7.30's request() API and its new handler API lose HTTP/2 trailers: both pass Node's
// trailers object to a parser that expects HTTP/1's flat array, so grpc-status never arrives
// (test/grpc-transport.unit.test.ts shows it). Its dispatch() with a handler of the original shape
// (onHeaders/onData/onComplete) receives them intact, so that is what this module uses.
import { Client, type Dispatcher } from 'undici';
import { linkSignals } from '@berth/core';
import { createCodec } from './protobuf.js';
import { GrpcError, grpcCodeOfHttp, GRPC_CODE } from './grpc-status.js';

/** google.protobuf.Any and the status details Modal sends, read only here. */
const details = createCodec({
  // One package, so that Status finds Any by protobuf's scoping.
  Any: { package: 'berth.wire', fields: { type_url: { number: 1, type: 'string' }, value: { number: 2, type: 'bytes' } } },
  Status: {
    package: 'berth.wire',
    fields: { code: { number: 1, type: 'int32' }, message: { number: 2, type: 'string' }, details: { number: 3, type: 'Any', label: 'repeated' } },
  },
  RetryPolicy: { package: 'berth.wire', fields: { retry_after_secs: { number: 1, type: 'float' } } },
} as const);

export interface GrpcEndpoint {
  /** https://host:port */
  origin: string;
  /** PEM: a CA to trust besides the system's (a private deployment, the simulator). */
  ca?: string | Buffer;
}

export interface GrpcCallOptions {
  /** '/package.Service/Method' */
  path: string;
  metadata: Record<string, string>;
  signal?: AbortSignal;
  /** No byte at all for this long ends the call (UNAVAILABLE). Long-polls need more than their hold time. */
  idleTimeoutMs?: number;
}

export interface GrpcTransportOptions {
  /** Sent as user-agent on every call (control plane and router alike). */
  userAgent?: string;
  /**
   * Each x-modal-warning the server attaches to an answer (in its trailers, or the headers of a
   * trailers-only error), percent-decoded: Modal's non-fatal notices, e.g. a client version that
   * will be deprecated. Called for every one; deduplicating is the caller's business.
   */
  onWarning?: (text: string, path: string) => void;
}

/** The header Modal attaches non-fatal notices with, one percent-encoded entry per warning. */
export const SERVER_WARNING_HEADER = 'x-modal-warning';

/** How berth talks gRPC: one HTTP/2 connection per origin, kept alive with pings. */
export class GrpcTransport {
  readonly #clients = new Map<string, Client>();
  readonly #endpoints = new Map<string, GrpcEndpoint>();
  readonly #options: GrpcTransportOptions;

  constructor(options: GrpcTransportOptions = {}) {
    this.#options = options;
  }

  #client(endpoint: GrpcEndpoint): Client {
    let client = this.#clients.get(endpoint.origin);
    if (!client) {
      client = new Client(endpoint.origin, {
        allowH2: true,
        // Streams in flight at once on the connection: undici's default of 1 would queue every call
        // (a stdout read, a stdin write, a terminate) behind a long-poll.
        pipelining: 128,
        // Large windows: tar streams and stdio reads carry megabytes.
        initialWindowSize: 16 * 1024 * 1024,
        connectionWindowSize: 64 * 1024 * 1024,
        pingInterval: 30_000,
        // Timeouts are per call (idleTimeoutMs), not undici's: long-polls hold for a minute.
        headersTimeout: 0,
        bodyTimeout: 0,
        connect: { ...(endpoint.ca ? { ca: endpoint.ca } : {}), ALPNProtocols: ['h2'] },
      });
      this.#clients.set(endpoint.origin, client);
      this.#endpoints.set(endpoint.origin, endpoint);
    }
    return client;
  }

  /** One request message, one response message. */
  async unary(endpoint: GrpcEndpoint, call: GrpcCallOptions, request: Uint8Array): Promise<Uint8Array> {
    let answer: Uint8Array | undefined;
    for await (const message of this.stream(endpoint, call, request)) answer ??= message;
    if (!answer) throw new GrpcError(GRPC_CODE.INTERNAL, `${call.path} answered OK without a message`);
    return answer;
  }

  /** One request message, the response messages as they arrive; a non-OK status is thrown at the end. */
  async *stream(endpoint: GrpcEndpoint, call: GrpcCallOptions, request: Uint8Array): AsyncGenerator<Uint8Array> {
    const queue = new MessageQueue();
    const body = Buffer.allocUnsafe(5 + request.length);
    body.writeUInt8(0, 0);
    body.writeUInt32BE(request.length, 1);
    body.set(request, 5);
    let idle: NodeJS.Timeout | undefined;
    // The caller's signal, the idle timeout and an early stop end the call; unlinked when it ends.
    const abort = linkSignals(call.signal);
    const touch = () => {
      if (call.idleTimeoutMs === undefined) return;
      clearTimeout(idle);
      idle = setTimeout(
        () => abort.abort(new GrpcError(GRPC_CODE.UNAVAILABLE, `${call.path}: nothing arrived for ${call.idleTimeoutMs} ms`)),
        call.idleTimeoutMs,
      );
    };
    touch();
    const handler: Dispatcher.DispatchHandler = new CallHandler(queue, touch, call.path, abort.signal, this.#options.onWarning);
    this.#client(endpoint).dispatch(
      {
        origin: endpoint.origin,
        path: call.path,
        method: 'POST',
        // undici holds a POST back while others run (HTTP/1 pipelining safety); gRPC streams are independent.
        idempotent: true,
        headers: {
          ...(this.#options.userAgent ? { 'user-agent': this.#options.userAgent } : {}),
          ...call.metadata,
          'content-type': 'application/grpc',
          te: 'trailers',
          'grpc-accept-encoding': 'identity',
        },
        body,
      } as Dispatcher.DispatchOptions,
      handler,
    );
    try {
      for (;;) {
        const next = await queue.next();
        if (next === undefined) return;
        yield next;
      }
    } finally {
      clearTimeout(idle);
      // A consumer that stops early cancels the stream (RST_STREAM).
      if (!queue.done) abort.abort(new GrpcError(GRPC_CODE.CANCELLED, `${call.path}: cancelled by the caller`));
      abort.dispose();
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.#clients.values()].map((c) => c.destroy().catch(() => undefined)));
    this.#clients.clear();
  }
}

/** Messages as they are parsed out of the response body, and how the call ended. */
class MessageQueue {
  readonly #items: Uint8Array[] = [];
  #end: { error?: unknown } | undefined;
  #wake: (() => void) | undefined;

  get done(): boolean {
    return this.#end !== undefined;
  }

  push(message: Uint8Array): void {
    this.#items.push(message);
    this.#wake?.();
  }

  finish(error?: unknown): void {
    this.#end ??= error === undefined ? {} : { error };
    this.#wake?.();
  }

  async next(): Promise<Uint8Array | undefined> {
    for (;;) {
      const item = this.#items.shift();
      if (item) return item;
      if (this.#end) {
        if (this.#end.error !== undefined) throw this.#end.error;
        return undefined;
      }
      await new Promise<void>((resolve) => (this.#wake = resolve));
      this.#wake = undefined;
    }
  }
}

/** undici's original handler shape: the one that hands HTTP/2 trailers over intact. */
class CallHandler {
  readonly #queue: MessageQueue;
  readonly #touch: () => void;
  readonly #path: string;
  readonly #signal: AbortSignal;
  readonly #onWarning: ((text: string, path: string) => void) | undefined;
  #pending: Buffer = Buffer.alloc(0);
  #headers: Record<string, string> = {};
  #warnings: string[] = [];
  #httpStatus = 0;

  constructor(queue: MessageQueue, touch: () => void, path: string, signal: AbortSignal, onWarning?: (text: string, path: string) => void) {
    this.#queue = queue;
    this.#touch = touch;
    this.#path = path;
    this.#signal = signal;
    this.#onWarning = onWarning;
  }

  /** dispatch() takes no signal: the abort it hands over here is how a call is cancelled (RST_STREAM). */
  onConnect(abort: (reason?: Error) => void): void {
    if (this.#signal.aborted) return abort(asError(this.#signal.reason));
    this.#signal.addEventListener('abort', () => abort(asError(this.#signal.reason)), { once: true });
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[] | string[]): boolean {
    this.#touch();
    this.#httpStatus = statusCode;
    this.#headers = flatHeaders(rawHeaders);
    // A trailers-only answer (a failed call) carries its metadata here.
    this.#warnings.push(...headerValues(rawHeaders, SERVER_WARNING_HEADER));
    return true;
  }

  onData(chunk: Buffer): boolean {
    this.#touch();
    this.#pending = this.#pending.length ? Buffer.concat([this.#pending, chunk]) : chunk;
    while (this.#pending.length >= 5) {
      const length = this.#pending.readUInt32BE(1);
      if (this.#pending.length < 5 + length) break;
      if (this.#pending[0] !== 0) {
        this.#queue.finish(new GrpcError(GRPC_CODE.INTERNAL, `${this.#path}: a compressed message arrived, and none was asked for`));
        return false;
      }
      this.#queue.push(Uint8Array.prototype.slice.call(this.#pending, 5, 5 + length));
      this.#pending = this.#pending.subarray(5 + length);
    }
    return true;
  }

  /** Typed as undici declares it; over HTTP/2 it is really Node's trailers object. */
  onComplete(declared: string[] | null): void {
    const trailers = declared as unknown as Record<string, string | string[] | undefined> | string[] | null;
    const all = { ...this.#headers, ...(trailers && !Array.isArray(trailers) ? stringValues(trailers) : flatHeaders(trailers ?? [])) };
    this.#warn([...this.#warnings, ...headerValues(trailers ?? [], SERVER_WARNING_HEADER)]);
    const status = all['grpc-status'];
    if (status === undefined) {
      // A 200 that ends without a status was cut on the way (a reset stream); another status came from a proxy.
      if (this.#httpStatus === 200)
        this.#queue.finish(
          new GrpcError(GRPC_CODE.UNAVAILABLE, `${this.#path}: the stream ended without a status (reset on the way)`, undefined, { transport: true }),
        );
      else this.#queue.finish(new GrpcError(grpcCodeOfHttp(this.#httpStatus), `${this.#path}: HTTP ${this.#httpStatus} without a gRPC status`));
      return;
    }
    const code = Number(status);
    if (code === GRPC_CODE.OK) {
      if (this.#pending.length) this.#queue.finish(new GrpcError(GRPC_CODE.INTERNAL, `${this.#path}: the answer ended inside a message`));
      else this.#queue.finish();
      return;
    }
    this.#queue.finish(new GrpcError(code, decodeMessageText(all['grpc-message'] ?? ''), retryAfterMs(all['grpc-status-details-bin'])));
  }

  /**
   * Each warning once per answer (one that came in the headers and again in the trailers is one).
   * Node joins a repeated header's entries with ', ': each entry is percent-encoded (its own commas
   * and spaces escaped), so splitting at the commas gives the entries back.
   */
  #warn(values: readonly string[]): void {
    if (!this.#onWarning) return;
    const texts = values.flatMap((v) => v.split(',')).map((e) => decodeMessageText(e.trim()));
    for (const text of new Set(texts)) if (text.trim()) this.#onWarning(text, this.#path);
  }

  onError(error: Error): void {
    this.#warn(this.#warnings);
    const reason = this.#signal.aborted ? this.#signal.reason : error;
    this.#queue.finish(GrpcError.isInstance(reason) ? reason : GrpcError.fromTransport(reason, this.#path));
  }
}

function asError(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error(String(reason));
}

function flatHeaders(raw: ReadonlyArray<Buffer | string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < raw.length; i += 2) out[String(raw[i]).toLowerCase()] = String(raw[i + 1]);
  return out;
}

/** Every value of one header, from undici's flat array or Node's object (a repeated header is an array there). */
function headerValues(raw: ReadonlyArray<Buffer | string> | Record<string, string | string[] | undefined>, name: string): string[] {
  const out: string[] = [];
  if (Array.isArray(raw)) {
    for (let i = 0; i + 1 < raw.length; i += 2) if (String(raw[i]).toLowerCase() === name) out.push(String(raw[i + 1]));
    return out;
  }
  for (const [key, value] of Object.entries(raw)) if (key.toLowerCase() === name && value !== undefined) out.push(...(Array.isArray(value) ? value : [value]));
  return out;
}

function stringValues(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(headers)) if (value !== undefined) out[key.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  return out;
}

/** grpc-message is percent-encoded UTF-8; a malformed one is kept as sent. */
export function decodeMessageText(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** The server's hint in grpc-status-details-bin (a Status whose details hold a RetryPolicy). */
export function retryAfterMs(detailsBin: string | undefined): number | undefined {
  if (!detailsBin) return undefined;
  try {
    const status = details.decode('Status', Buffer.from(detailsBin, 'base64'));
    for (const entry of status.details ?? []) {
      const any = entry as { type_url?: string; value?: Uint8Array };
      if (!any.type_url?.endsWith('RPCRetryPolicy') || !any.value) continue;
      const seconds = details.decode('RetryPolicy', any.value).retry_after_secs;
      if (typeof seconds === 'number' && seconds > 0) return Math.round(seconds * 1000);
    }
  } catch {
    // A hint that cannot be read is no hint.
  }
  return undefined;
}
