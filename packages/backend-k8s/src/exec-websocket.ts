import { createHash, randomBytes, randomFillSync } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { Duplex } from 'node:stream';

// The client half of RFC 6455 that the exec subresource needs, reading payloads as they arrive.
// A general client (ws) reassembles each message before handing it over: with the API server's
// 8-64 KiB frames and TLS's 16 KiB reads that copied most of a download once more (profiled at a
// quarter of a 200 MiB download's CPU). The exec protocol needs no message whole but the Status:
// each payload byte after the channel byte is stream data.

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
const CONTINUATION = 0x0;
const BINARY = 0x2;
const CLOSE = 0x8;
const PING = 0x9;
const PONG = 0xa;
/** The longest length a header's 7 bits hold; also the most a control frame may carry (RFC 6455 5.5). */
const SHORT_LENGTH = 125;

/** A failed upgrade: the HTTP status the API server answered with (mapped like any API error). */
export class ExecUpgradeError extends Error {
  readonly statusCode: number;
  constructor(statusCode: number, body: string) {
    super(`exec was refused with HTTP ${statusCode}${body ? `: ${body.slice(0, 300)}` : ''}`);
    this.statusCode = statusCode;
  }
}

/** What the reader hands over: payload bytes of a binary message, channel first. */
export interface ExecSocketHandlers {
  /** Part of a message on `channel`; `end` on its last part. The data is a view of what was read: no copy. */
  data(channel: number, data: Buffer, end: boolean): void;
  /** The connection ended, however it did. */
  close(): void;
}

export interface ExecSocketOptions {
  url: string;
  protocols: readonly string[];
  /** TLS and auth options as client-node's applyToHTTPSOptions leaves them (ca, cert, key, headers, agent). */
  request: https.RequestOptions;
}

/** One exec connection after its upgrade. */
export class ExecSocket {
  readonly protocol: string;
  readonly #socket: Duplex;
  readonly #handlers: ExecSocketHandlers;
  /**
   * Masking keeps a script's bytes from being read as HTTP by a proxy that sees them; inside TLS
   * no proxy does, so frames go with a zero key (the API server accepts any): masking 200 MiB in
   * JavaScript cost ~0.9 s of CPU per upload (measured). Plain ws:// keeps random keys.
   */
  readonly #zeroMask: boolean;
  #header = Buffer.alloc(0);
  /** The frame being read: its opcode, payload bytes left, mask, and whether it ends its message. */
  #opcode = 0;
  #left = 0;
  #fin = true;
  #mask: Buffer | undefined;
  #maskOffset = 0;
  /** The message's channel, once its first payload byte came; -1 before. */
  #channel = -1;
  #messageOpcode = 0;
  #control: Buffer[] = [];
  #inFrame = false;
  #closed = false;

  private constructor(socket: Duplex, protocol: string, zeroMask: boolean, handlers: ExecSocketHandlers, head: Buffer) {
    this.#socket = socket;
    this.protocol = protocol;
    this.#zeroMask = zeroMask;
    this.#handlers = handlers;
    socket.on('data', (chunk: Buffer) => this.#read(chunk));
    socket.on('error', () => undefined); // surfaced through 'close'
    socket.once('close', () => {
      this.#closed = true;
      handlers.close();
    });
    if (head.length) this.#read(head);
  }

  /** Open an exec WebSocket; rejects with ExecUpgradeError when the API server answers with an HTTP status instead. */
  static connect(options: ExecSocketOptions, handlers: ExecSocketHandlers): Promise<ExecSocket> {
    const url = new URL(options.url);
    const secure = url.protocol === 'wss:';
    const key = randomBytes(16).toString('base64');
    const headers = {
      ...(options.request.headers ?? {}),
      Connection: 'Upgrade',
      Upgrade: 'websocket',
      'Sec-WebSocket-Version': '13',
      'Sec-WebSocket-Key': key,
      'Sec-WebSocket-Protocol': options.protocols.join(', '),
    };
    const request = (secure ? https : http).request(options.url.replace(/^ws/, 'http'), { ...options.request, method: 'GET', headers });
    return new Promise((resolve, reject) => {
      request.once('error', reject);
      request.once('response', (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
        res.on('end', () => reject(new ExecUpgradeError(res.statusCode ?? 0, body)));
        res.on('error', () => reject(new ExecUpgradeError(res.statusCode ?? 0, body)));
      });
      request.once('upgrade', (res, socket, head) => {
        const accept = createHash('sha1')
          .update(key + GUID)
          .digest('base64');
        const protocol = String(res.headers['sec-websocket-protocol'] ?? '');
        if (res.headers['sec-websocket-accept'] !== accept || !options.protocols.includes(protocol)) {
          socket.destroy();
          reject(new Error(`the exec upgrade was answered without a valid WebSocket handshake (subprotocol "${protocol}")`));
          return;
        }
        (socket as { setNoDelay?: (on: boolean) => void }).setNoDelay?.(true);
        resolve(new ExecSocket(socket, protocol, secure, handlers, head));
      });
      request.end();
    });
  }

  get open(): boolean {
    return !this.#closed && !this.#socket.destroyed;
  }

  /** One binary message; `done` once the socket took it (the buffer may then be reused). */
  send(payload: Buffer, done?: (error?: Error) => void): void {
    this.#frame(BINARY, payload, done);
  }

  ping(): void {
    this.#frame(PING, Buffer.alloc(0));
  }

  pause(): void {
    this.#socket.pause();
  }

  resume(): void {
    this.#socket.resume();
  }

  /** Drop the connection at once. */
  terminate(): void {
    this.#socket.destroy();
  }

  #frame(opcode: number, payload: Buffer, done?: (error?: Error) => void): void {
    if (!this.open) {
      done?.(new Error('the exec connection is closed'));
      return;
    }
    const length = payload.length;
    const extra = length > 0xffff ? 8 : length > SHORT_LENGTH ? 2 : 0;
    const header = Buffer.allocUnsafe(2 + extra + 4);
    header[0] = 0x80 | opcode;
    header[1] = 0x80 | (extra === 8 ? 127 : extra === 2 ? 126 : length);
    if (extra === 2) header.writeUInt16BE(length, 2);
    if (extra === 8) header.writeBigUInt64BE(BigInt(length), 2);
    const mask = header.subarray(2 + extra);
    let body = payload;
    if (this.#zeroMask) mask.fill(0);
    else {
      // Plain ws:// keeps what masking is for: a fresh random key per frame, on a copy (the caller's buffer stays as it was).
      randomFillSync(mask);
      body = Buffer.allocUnsafe(length);
      for (let i = 0; i < length; i++) body[i] = payload[i]! ^ mask[i & 3]!;
    }
    this.#socket.cork();
    this.#socket.write(header);
    this.#socket.write(body, (error) => done?.(error ?? undefined));
    this.#socket.uncork();
  }

  #read(chunk: Buffer): void {
    let offset = 0;
    while (offset < chunk.length && !this.#closed) {
      if (!this.#inFrame) {
        const used = this.#readHeader(chunk, offset);
        if (used < 0) return;
        offset = used;
        if (this.#left === 0) this.#endFrame();
        continue;
      }
      const take = Math.min(this.#left, chunk.length - offset);
      let part = chunk.subarray(offset, offset + take);
      offset += take;
      this.#left -= take;
      if (this.#mask) {
        // A server never masks (RFC 6455 5.1); unmask a copy all the same rather than misread.
        const copy = Buffer.from(part);
        for (let i = 0; i < copy.length; i++) copy[i]! ^= this.#mask[(this.#maskOffset + i) & 3]!;
        this.#maskOffset += copy.length;
        part = copy;
      }
      this.#payload(part);
      if (this.#left === 0) this.#endFrame();
    }
  }

  /** Parse a frame header from `chunk` at `offset` (with what an earlier chunk left); -1 if it is not all here yet. */
  #readHeader(chunk: Buffer, offset: number): number {
    const pending = this.#header.length;
    const bytes = pending ? Buffer.concat([this.#header, chunk.subarray(offset, offset + 14)]) : chunk.subarray(offset);
    if (bytes.length < 2) return this.#keep(bytes);
    const masked = (bytes[1]! & 0x80) !== 0;
    const short = bytes[1]! & 0x7f;
    const size = 2 + (short === 126 ? 2 : short === 127 ? 8 : 0) + (masked ? 4 : 0);
    if (bytes.length < size) return this.#keep(bytes);
    const length = short === 126 ? bytes.readUInt16BE(2) : short === 127 ? Number(bytes.readBigUInt64BE(2)) : short;
    const opcode = bytes[0]! & 0x0f;
    this.#fin = (bytes[0]! & 0x80) !== 0;
    this.#opcode = opcode;
    this.#left = length;
    this.#mask = masked ? Buffer.from(bytes.subarray(size - 4, size)) : undefined;
    this.#maskOffset = 0;
    this.#inFrame = true;
    this.#header = Buffer.alloc(0);
    if (opcode >= CLOSE && length > SHORT_LENGTH) {
      this.terminate();
      return chunk.length;
    }
    if (opcode !== CONTINUATION && opcode < CLOSE) {
      this.#messageOpcode = opcode;
      this.#channel = -1;
    }
    return offset + size - pending;
  }

  /** Keep a header's first bytes for the next chunk. */
  #keep(bytes: Buffer): number {
    this.#header = Buffer.from(bytes);
    return -1;
  }

  #payload(part: Buffer): void {
    if (this.#opcode >= CLOSE) {
      this.#control.push(part);
      return;
    }
    if (this.#messageOpcode !== BINARY || part.length === 0) return; // text messages carry nothing of exec's
    let data = part;
    if (this.#channel < 0) {
      this.#channel = data[0]!;
      data = data.subarray(1);
    }
    // Each part goes out as it came; the message's end is told by #endFrame.
    if (data.length) this.#handlers.data(this.#channel, data, false);
  }

  #endFrame(): void {
    this.#inFrame = false;
    this.#mask = undefined;
    const opcode = this.#opcode;
    if (opcode >= CLOSE) {
      const payload = Buffer.concat(this.#control);
      this.#control = [];
      if (opcode === PING) this.#frame(PONG, payload);
      else if (opcode === CLOSE) {
        // Answer the close and let the server end the TCP connection; drop it if it does not.
        this.#frame(CLOSE, payload.subarray(0, 2));
        this.#socket.end();
        setTimeout(() => this.#socket.destroy(), 1000).unref();
      }
      return;
    }
    if (this.#fin && this.#messageOpcode === BINARY && this.#channel >= 0) {
      this.#handlers.data(this.#channel, Buffer.alloc(0), true);
      this.#channel = -1;
    }
  }
}
