// Exec stdin frames are unmasked only inside TLS (wss://, where no proxy reads them and the API
// server accepts any key: every upload in the conformance suite goes that way). On plain ws:// the
// masks stay random: a local server speaking just enough WebSocket reads the keys off the wire.
import { createHash } from 'node:crypto';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { Cluster } from '../src/cluster.js';
import { spawnExec } from '../src/exec-socket.js';

const servers: Server[] = [];
afterAll(() => {
  for (const s of servers) s.close();
});

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

/** Accepts one exec upgrade, records the mask key of every client frame, answers Success once stdin closes. */
function execServer(): Promise<{ port: number; masks: Buffer[] }> {
  const masks: Buffer[] = [];
  const server = createServer((socket: Socket) => {
    let buffer = Buffer.alloc(0);
    let upgraded = false;
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      if (!upgraded) {
        const end = buffer.indexOf('\r\n\r\n');
        if (end < 0) return;
        const key = /sec-websocket-key: *(\S+)/i.exec(buffer.subarray(0, end).toString('latin1'))![1]!;
        const accept = createHash('sha1')
          .update(key + GUID)
          .digest('base64');
        socket.write(
          `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n`,
        );
        buffer = buffer.subarray(end + 4);
        upgraded = true;
      }
      for (;;) {
        if (buffer.length < 2) return;
        let length = buffer[1]! & 0x7f;
        let offset = 2;
        if (length === 126) {
          if (buffer.length < 4) return;
          length = buffer.readUInt16BE(2);
          offset = 4;
        } else if (length === 127) {
          if (buffer.length < 10) return;
          length = Number(buffer.readBigUInt64BE(2));
          offset = 10;
        }
        const buffer0 = buffer[0]!;
        const masked = (buffer[1]! & 0x80) !== 0;
        if (buffer.length < offset + (masked ? 4 : 0) + length) return;
        const mask = masked ? Buffer.from(buffer.subarray(offset, offset + 4)) : Buffer.alloc(0);
        offset += masked ? 4 : 0;
        const payload = Buffer.from(buffer.subarray(offset, offset + length));
        if (masked) for (let i = 0; i < payload.length; i++) payload[i]! ^= mask[i % 4]!;
        buffer = buffer.subarray(offset + length);
        // Binary messages only (stdin and its close); ws's own close frame has a key too.
        if ((buffer0 & 0x0f) === 2) masks.push(mask);
        if (payload[0] === 255 && payload[1] === 0) {
          // stdin closed: the final Status, then the close frame.
          const status = Buffer.concat([Buffer.from([3]), Buffer.from('{"status":"Success"}')]);
          socket.write(Buffer.concat([Buffer.from([0x82, status.length]), status]));
          socket.end(Buffer.from([0x88, 0]));
        }
      }
    });
    socket.on('error', () => undefined);
  });
  servers.push(server);
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ port: (server.address() as AddressInfo).port, masks })));
}

describe('k8s exec frame masks', () => {
  it('on plain ws:// every stdin frame carries its own random mask key', async () => {
    const { port, masks } = await execServer();
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
    expect(masks.length).toBe(4);
    for (const mask of masks) expect(mask.length, 'every client frame is masked').toBe(4);
    const keys = new Set(masks.map((m) => m.toString('hex')));
    expect(keys.has('00000000'), 'no zero key outside TLS').toBe(false);
    expect(keys.size, 'a fresh key per frame').toBe(4);
  });
});
