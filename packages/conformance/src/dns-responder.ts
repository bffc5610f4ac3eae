import { createSocket } from 'node:dgram';
import { isIPv4 } from 'node:net';

/**
 * The zone the responder answers: `<token>.berth-conformance.test` (RFC 6761 keeps `.test` off
 * the public DNS). A fresh token per lookup means only that sandbox's query can count.
 */
export const DNS_ZONE = 'berth-conformance.test';

export interface DnsResponder {
  port: number;
  /** Did a query for this name (any type, any case) arrive? */
  asked(name: string): boolean;
  close(): Promise<void>;
}

/** The queried name and the bytes after it (type, class), or undefined for what is not one query. */
function readQuestion(msg: Buffer): { name: string; end: number } | undefined {
  if (msg.length < 12 || msg.readUInt16BE(4) !== 1) return undefined;
  const labels: string[] = [];
  let at = 12;
  while (at < msg.length) {
    const len = msg[at] as number;
    if (len === 0) return at + 5 <= msg.length ? { name: labels.join('.').toLowerCase(), end: at + 5 } : undefined;
    // Compression pointers never appear in a question a client writes.
    if (len > 63) return undefined;
    labels.push(msg.toString('latin1', at + 1, at + 1 + len));
    at += 1 + len;
  }
  return undefined;
}

/**
 * A tiny authoritative DNS responder on UDP `host:port` (port 0: an ephemeral one). It answers A
 * queries for names in `zone` (default DNS_ZONE) with `host` (127.0.0.1 when host is not IPv4), other types in the
 * zone with no records, and anything else NXDOMAIN; every name asked is remembered. It exists so
 * that "DNS fails on network 'none'" has a positive control: a public sandbox resolves a name
 * through it, so a lookup that fails can only be the network's doing.
 */
export async function startDnsResponder(host: string, port = 0, zone = DNS_ZONE): Promise<DnsResponder> {
  const asked = new Set<string>();
  const answer = Buffer.from((isIPv4(host) ? host : '127.0.0.1').split('.').map(Number));
  const socket = createSocket(isIPv4(host) ? 'udp4' : 'udp6');
  socket.on('message', (msg, peer) => {
    const question = readQuestion(msg);
    if (!question) return;
    asked.add(question.name);
    const inZone = question.name.endsWith(`.${zone}`);
    const isA = msg.readUInt16BE(question.end - 4) === 1 && msg.readUInt16BE(question.end - 2) === 1;
    const header = Buffer.alloc(12);
    header.writeUInt16BE(msg.readUInt16BE(0), 0); // the query's id
    // QR, AA, the query's RD, RA; rcode 0 (NOERROR) or 3 (NXDOMAIN).
    header.writeUInt16BE(0x8480 | (msg.readUInt16BE(2) & 0x0100) | (inZone ? 0 : 3), 2);
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(inZone && isA ? 1 : 0, 6);
    const parts = [header, msg.subarray(12, question.end)];
    if (inZone && isA) {
      const record = Buffer.alloc(12);
      record.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
      record.writeUInt16BE(1, 2); // A
      record.writeUInt16BE(1, 4); // IN
      record.writeUInt32BE(0, 6); // TTL 0: nothing caches it
      record.writeUInt16BE(4, 10);
      parts.push(record, answer);
    }
    socket.send(Buffer.concat(parts), peer.port, peer.address);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(port, host, () => {
      socket.off('error', reject);
      resolve();
    });
  });
  // A send to a peer that went away must not crash the test process.
  socket.on('error', () => undefined);
  return {
    port: socket.address().port,
    asked: (name) => asked.has(name.toLowerCase()),
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}

/**
 * A responder on port 53 of `host`, where a resolv.conf can point (it has no port). Suites on the
 * same machine may want the same address at once: a port in use is waited for, up to `waitMs`.
 */
export async function startDnsResponderOn53(host: string, waitMs = 90_000): Promise<DnsResponder> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      return await startDnsResponder(host, 53);
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'EADDRINUSE' || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}
