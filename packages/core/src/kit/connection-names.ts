// What a connection through berth's egress proxy (egress-proxy.ts) asks for, by name.

/**
 * The server name (SNI) a TLS ClientHello asks for, read from the first bytes a client sends: what
 * berth's egress proxy matches an allowlist's names against. Only parsing: no TLS is terminated.
 * 'incomplete': more bytes are needed; 'invalid': not a ClientHello; undefined: a ClientHello
 * naming no server (an address-only client), which no name entry allows.
 */
export function tlsServerName(data: Buffer): string | undefined | 'incomplete' | 'invalid' {
  // The handshake message, possibly split over several records (each: type, version, length).
  const handshake: Buffer[] = [];
  let at = 0;
  let have = 0;
  let need: number | undefined;
  while (need === undefined || have < need) {
    if (data.length < at + 5) return 'incomplete';
    if (data[at] !== 0x16 || data[at + 1] !== 0x03) return 'invalid';
    const length = data.readUInt16BE(at + 3);
    if (data.length < at + 5 + length) return 'incomplete';
    const fragment = data.subarray(at + 5, at + 5 + length);
    handshake.push(fragment);
    have += fragment.length;
    at += 5 + length;
    if (need === undefined) {
      const head = Buffer.concat(handshake);
      if (head.length < 4) continue;
      if (head[0] !== 0x01) return 'invalid';
      need = 4 + head.readUIntBE(1, 3);
      // A ClientHello is small; anything claiming more than 64 KiB is not one berth reads.
      if (need > 65_536) return 'invalid';
    }
  }
  return serverNameOf(Buffer.concat(handshake).subarray(4, need));
}

/** The body of a ClientHello: version, random, session id, cipher suites, compression, then extensions. */
function serverNameOf(hello: Buffer): string | undefined | 'invalid' {
  let at = 2 + 32;
  const skip = (lengthBytes: 1 | 2): boolean => {
    if (hello.length < at + lengthBytes) return false;
    at += lengthBytes + hello.readUIntBE(at, lengthBytes);
    return at <= hello.length;
  };
  if (!skip(1) || !skip(2) || !skip(1)) return 'invalid';
  if (at === hello.length) return undefined; // no extensions
  if (hello.length < at + 2) return 'invalid';
  const end = at + 2 + hello.readUInt16BE(at);
  if (end > hello.length) return 'invalid';
  at += 2;
  while (at + 4 <= end) {
    const type = hello.readUInt16BE(at);
    const length = hello.readUInt16BE(at + 2);
    const body = hello.subarray(at + 4, at + 4 + length);
    at += 4 + length;
    if (at > end) return 'invalid';
    if (type !== 0) continue;
    // server_name: a list of (type, name); type 0 is a host name (the only one defined).
    let i = 2;
    while (i + 3 <= body.length) {
      const nameType = body[i]!;
      const nameLength = body.readUInt16BE(i + 1);
      const name = body.subarray(i + 3, i + 3 + nameLength);
      if (name.length !== nameLength) return 'invalid';
      if (nameType === 0) return name.toString('ascii').toLowerCase().replace(/\.$/, '');
      i += 3 + nameLength;
    }
    return 'invalid';
  }
  return undefined;
}

/**
 * The host an HTTP/1 request names (its Host header, its port dropped), from the bytes up to the
 * end of its headers: what the proxy matches port 80's requests by. 'incomplete' until the headers
 * end; 'invalid' for what is not an HTTP request; undefined when it names no host.
 */
export function httpHost(data: Buffer): string | undefined | 'incomplete' | 'invalid' {
  const end = data.indexOf('\r\n\r\n');
  if (end < 0) return data.length > 16_384 ? 'invalid' : 'incomplete';
  const lines = data.subarray(0, end).toString('latin1').split('\r\n');
  if (!/^[A-Z]+ \S+ HTTP\/1\.[01]$/.test(lines[0] ?? '')) return 'invalid';
  for (const line of lines.slice(1)) {
    const m = /^host:\s*(.+?)\s*$/i.exec(line);
    if (!m) continue;
    const host = m[1]!.toLowerCase();
    // [v6]:port, or name:port.
    return host.startsWith('[') ? host.slice(1, host.indexOf(']')) : host.replace(/:\d+$/, '').replace(/\.$/, '');
  }
  return undefined;
}
