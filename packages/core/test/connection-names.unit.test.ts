// The names berth's egress proxy matches: a real ClientHello's server name (Node's TLS client's,
// written into a stream, no network), an HTTP request's Host, and DNS questions and answers.
import { Duplex } from 'node:stream';
import { connect } from 'node:tls';
import { describe, expect, it } from 'vitest';
import { httpHost, tlsServerName } from '../src/kit/connection-names.js';
import { DNS_TYPE_A, dnsAnswer, dnsNoSuchName, dnsRefused, parseDnsQuery } from '../src/kit/dns-message.js';

/** The first bytes Node's TLS client sends naming `servername` (none: an address, no SNI). */
async function clientHello(servername?: string): Promise<Buffer> {
  let written = Buffer.alloc(0);
  let done: (b: Buffer) => void = () => undefined;
  const first = new Promise<Buffer>((resolve) => (done = resolve));
  const wire = new Duplex({
    read() {},
    write(chunk: Buffer, _encoding, callback) {
      written = Buffer.concat([written, chunk]);
      done(written);
      callback();
    },
  });
  const tls = connect({ socket: wire, ...(servername ? { servername } : {}) });
  tls.on('error', () => undefined);
  try {
    return await first;
  } finally {
    tls.destroy();
  }
}

/** A DNS query for `name` of `type`, as a stub resolver sends it. */
function query(name: string, type = DNS_TYPE_A, id = 0x1234): Buffer {
  const labels = name.split('.').flatMap((l) => [Buffer.from([l.length]), Buffer.from(l)]);
  return Buffer.concat([Buffer.from([id >> 8, id & 0xff, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]), ...labels, Buffer.from([0, 0, type, 0, 1])]);
}

describe('tlsServerName', () => {
  it("reads the server name of Node's ClientHello, lower-cased", async () => {
    expect(tlsServerName(await clientHello('API.Example.test'))).toBe('api.example.test');
  });

  it('says incomplete for every prefix of it, and undefined for a ClientHello naming no server', async () => {
    const hello = await clientHello('pypi.org');
    for (const n of [0, 1, 5, 9, 40, hello.length - 1]) expect(tlsServerName(hello.subarray(0, n))).toBe('incomplete');
    expect(tlsServerName(await clientHello())).toBeUndefined();
  });

  it('reads a ClientHello split over two TLS records', async () => {
    const hello = await clientHello('split.example.test');
    const body = hello.subarray(5);
    const record = (part: Buffer) => Buffer.concat([Buffer.from([0x16, 0x03, 0x01, part.length >> 8, part.length & 0xff]), part]);
    expect(tlsServerName(Buffer.concat([record(body.subarray(0, 30)), record(body.subarray(30))]))).toBe('split.example.test');
  });

  it('calls what is not a ClientHello invalid: plain HTTP, an SSH banner, a server hello', () => {
    expect(tlsServerName(Buffer.from('GET / HTTP/1.1\r\n'))).toBe('invalid');
    expect(tlsServerName(Buffer.from('SSH-2.0-OpenSSH_9.2\r\n'))).toBe('invalid');
    expect(tlsServerName(Buffer.from([0x16, 0x03, 0x03, 0x00, 0x04, 0x02, 0x00, 0x00, 0x00]))).toBe('invalid');
  });
});

describe('httpHost', () => {
  it('reads the Host header, its port and a trailing dot dropped; incomplete until the headers end', () => {
    expect(httpHost(Buffer.from('GET /simple/ HTTP/1.1\r\nUser-Agent: pip\r\nHost: PyPI.org:80\r\n\r\n'))).toBe('pypi.org');
    expect(httpHost(Buffer.from('GET / HTTP/1.0\r\nhost: deb.debian.org.\r\n\r\nbody'))).toBe('deb.debian.org');
    expect(httpHost(Buffer.from('GET / HTTP/1.1\r\nHost: pypi.org\r\n'))).toBe('incomplete');
  });

  it('says undefined without a Host, invalid for what is not HTTP/1', () => {
    expect(httpHost(Buffer.from('GET / HTTP/1.0\r\n\r\n'))).toBeUndefined();
    expect(httpHost(Buffer.from('\x16\x03\x01\r\n\r\n'))).toBe('invalid');
  });
});

describe('DNS messages', () => {
  it('parses a query and answers it with A records echoing its id and question', () => {
    const q = parseDnsQuery(query('Files.Example.test'));
    expect(q).toMatchObject({ id: 0x1234, name: 'files.example.test', type: DNS_TYPE_A, recursionDesired: true });
    const answer = dnsAnswer(q!, ['10.1.2.3', '10.1.2.4']);
    expect(answer.readUInt16BE(0)).toBe(0x1234);
    expect(answer.readUInt16BE(2) & 0x800f).toBe(0x8000); // a response, NOERROR
    expect(answer.readUInt16BE(6)).toBe(2);
    expect([...answer.subarray(-4)]).toEqual([10, 1, 2, 4]);
  });

  it('answers another type with no records, refuses and denies by code, ignores what is not a query', () => {
    const q = parseDnsQuery(query('example.test', 28))!;
    expect(dnsAnswer(q, ['10.1.2.3']).readUInt16BE(6)).toBe(0);
    expect(dnsRefused(q).readUInt16BE(2) & 0xf).toBe(5);
    expect(dnsNoSuchName(q).readUInt16BE(2) & 0xf).toBe(3);
    const response = query('example.test');
    response[2] = 0x81;
    expect(parseDnsQuery(response)).toBeUndefined();
    expect(parseDnsQuery(Buffer.from([1, 2, 3]))).toBeUndefined();
  });
});
