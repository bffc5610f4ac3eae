// berth's exec WebSocket reader against a local server that writes frames the awkward ways a
// real one may: headers and payloads cut at every byte, a message in fragments with a ping
// between them, 16- and 64-bit lengths, a Status in two parts, a close. What comes out must be
// the bytes sent, on their channels, with the ping answered and the close honoured. And the
// masks: unmasked only inside TLS (wss://, where no proxy reads the stream and the API server
// accepts any key: every upload in the conformance suite goes that way); on plain ws:// the same
// server reads a random key per frame off the wire.
import { createHash } from 'node:crypto';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { Cluster } from '../src/cluster.js';
import { spawnExec } from '../src/exec-socket.js';
import { ExecSocket, ExecUpgradeError } from '../src/exec-websocket.js';

const servers: Server[] = [];
afterAll(() => {
  for (const s of servers) s.close();
});

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

/** A server frame (never masked): FIN, opcode, the length in its shortest form. */
function frame(opcode: number, payload: Buffer, fin = true): Buffer {
  const n = payload.length;
  const head = n > 0xffff ? Buffer.alloc(10) : n > 125 ? Buffer.alloc(4) : Buffer.alloc(2);
  head[0] = (fin ? 0x80 : 0) | opcode;
  if (n > 0xffff) {
    head[1] = 127;
    head.writeBigUInt64BE(BigInt(n), 2);
  } else if (n > 125) {
    head[1] = 126;
    head.writeUInt16BE(n, 2);
  } else head[1] = n;
  return Buffer.concat([head, payload]);
}

/** Client frames as the server reads them: opcode, mask key and unmasked payload. */
function readClientFrames(data: Buffer): Array<{ opcode: number; mask: Buffer; payload: Buffer }> {
  const frames: Array<{ opcode: number; mask: Buffer; payload: Buffer }> = [];
  let at = 0;
  while (at + 2 <= data.length) {
    let n = data[at + 1]! & 0x7f;
    let o = at + 2;
    if (n === 126) {
      n = data.readUInt16BE(o);
      o += 2;
    } else if (n === 127) {
      n = Number(data.readBigUInt64BE(o));
      o += 8;
    }
    const mask = Buffer.from(data.subarray(o, o + 4));
    o += 4;
    if (o + n > data.length) break;
    const payload = Buffer.from(data.subarray(o, o + n));
    for (let i = 0; i < n; i++) payload[i]! ^= mask[i % 4]!;
    frames.push({ opcode: data[at]! & 0x0f, mask, payload });
    at = o + n;
  }
  return frames;
}

/** A server that upgrades, then runs `script` with the socket; what the client sent is kept. */
async function server(
  script: (socket: Socket, received: () => Buffer) => Promise<void>,
  answer?: string,
): Promise<{ url: string; port: number; received: () => Buffer }> {
  let received = Buffer.alloc(0);
  const srv = createServer((socket) => {
    let upgraded = false;
    let head = Buffer.alloc(0);
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      if (upgraded) {
        received = Buffer.concat([received, chunk]);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      upgraded = true;
      if (answer) {
        socket.end(answer);
        return;
      }
      const key = /sec-websocket-key: *(\S+)/i.exec(head.toString('latin1'))![1]!;
      const accept = createHash('sha1')
        .update(key + GUID)
        .digest('base64');
      socket.write(
        `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n`,
      );
      void script(socket, () => received);
    });
  });
  servers.push(srv);
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as AddressInfo).port;
  return { url: `ws://127.0.0.1:${port}/exec`, port, received: () => received };
}

/** Write bytes one at a time, each its own TCP segment as far as the reader can tell. */
async function dribble(socket: Socket, bytes: Buffer): Promise<void> {
  for (let i = 0; i < bytes.length; i++) {
    socket.write(bytes.subarray(i, i + 1));
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('the exec WebSocket reader', () => {
  it('puts cut, fragmented and interleaved frames back into the bytes sent, answers a ping and honours a close', async () => {
    const stdout = Buffer.from('hello, fragmented world');
    const big = Buffer.alloc(70_000, 'b'); // a 64-bit length
    const mid = Buffer.alloc(300, 'm'); // a 16-bit length
    const { url, received } = await server(async (socket) => {
      await dribble(socket, frame(2, Buffer.concat([Buffer.from([1]), stdout.subarray(0, 5)]), false));
      await dribble(socket, frame(9, Buffer.from('are you there')));
      await dribble(socket, frame(0, stdout.subarray(5, 12), false));
      await dribble(socket, frame(0, stdout.subarray(12), true));
      socket.write(frame(2, Buffer.concat([Buffer.from([2]), mid])));
      socket.write(frame(2, Buffer.concat([Buffer.from([1]), big])));
      const status = Buffer.from('{"status":"Failure","reason":"NonZeroExitCode"}');
      socket.write(frame(2, Buffer.concat([Buffer.from([3]), status.subarray(0, 10)]), false));
      socket.write(frame(0, status.subarray(10)));
      await dribble(socket, frame(8, Buffer.from([0x03, 0xe8])));
      setTimeout(() => socket.end(), 50);
    });
    const channels = new Map<number, Buffer[]>();
    const ends: number[] = [];
    let closed!: () => void;
    const done = new Promise<void>((resolve) => (closed = resolve));
    await ExecSocket.connect(
      { url, protocols: ['v5.channel.k8s.io'], request: {} },
      {
        data(channel, data, end) {
          channels.set(channel, [...(channels.get(channel) ?? []), Buffer.from(data)]);
          if (end) ends.push(channel);
        },
        close: () => closed(),
      },
    );
    await done;
    expect(Buffer.concat(channels.get(1) ?? []).toString()).toBe(stdout.toString() + big.toString());
    expect(Buffer.concat(channels.get(2) ?? []).toString()).toBe(mid.toString());
    expect(Buffer.concat(channels.get(3) ?? []).toString()).toBe('{"status":"Failure","reason":"NonZeroExitCode"}');
    expect(ends).toEqual([1, 2, 1, 3]);
    const sent = readClientFrames(received());
    expect(sent.map((f) => f.opcode)).toEqual([0xa, 0x8]);
    expect(sent[0]!.payload.toString(), 'the pong carries the ping payload').toBe('are you there');
    expect([...sent[1]!.payload], 'the close is answered with its code').toEqual([0x03, 0xe8]);
  });

  it('an HTTP answer instead of an upgrade is an ExecUpgradeError with the status and body', async () => {
    const body = '{"kind":"Status","message":"pods \\"x\\" is forbidden","code":403}';
    const { url } = await server(async () => undefined, `HTTP/1.1 403 Forbidden\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
    const error = await ExecSocket.connect({ url, protocols: ['v5.channel.k8s.io'], request: {} }, { data: () => undefined, close: () => undefined }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ExecUpgradeError);
    expect((error as ExecUpgradeError).statusCode).toBe(403);
    expect((error as Error).message).toContain('is forbidden');
  });

  it('on plain ws:// every stdin frame carries its own random mask key', async () => {
    const binary = (received: Buffer) => readClientFrames(received).filter((f) => f.opcode === 2);
    const { port, received } = await server(async (socket, got) => {
      // Once stdin is closed (v5: channel 255, stream 0): the final Status, then the close frame.
      while (!binary(got()).some((f) => f.payload[0] === 255 && f.payload[1] === 0)) await sleep(5);
      socket.write(frame(2, Buffer.concat([Buffer.from([3]), Buffer.from('{"status":"Success"}')])));
      socket.end(frame(8, Buffer.alloc(0)));
    });
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'local', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
      users: [{ name: 'local' }],
      contexts: [{ name: 'local', cluster: 'local', user: 'local', namespace: 'berth-test' }],
      currentContext: 'local',
    });
    const cluster = new Cluster({ kubeconfig: kc });
    cluster.execProtocol = 'v5.channel.k8s.io';
    const proc = await spawnExec(cluster, 'pod', { argv: ['cat'], env: {}, stdin: true, asRoot: true });
    proc.stdout.resume();
    proc.stderr.resume();
    // Three parts of at most 1 MiB each (the frame limit), then the close of stdin.
    proc.stdin!.end(Buffer.alloc(3 * 1024 * 1024 - 5, 7));
    expect(await proc.exit).toEqual({ code: 0 });
    const masks = binary(received()).map((f) => f.mask);
    expect(masks.length).toBe(4);
    for (const mask of masks) expect(mask.length, 'every client frame is masked').toBe(4);
    const keys = new Set(masks.map((m) => m.toString('hex')));
    expect(keys.has('00000000'), 'no zero key outside TLS').toBe(false);
    expect(keys.size, 'a fresh key per frame').toBe(4);
  });
});
