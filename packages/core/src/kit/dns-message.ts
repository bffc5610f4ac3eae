// The little of DNS's wire format (RFC 1035) berth's egress proxy answers with: one question in,
// its A records (or none) or a refusal out.

export interface DnsQuestion {
  id: number;
  /** Lower case, without the trailing dot. */
  name: string;
  type: number;
  /** The flags' recursion-desired bit, echoed. */
  recursionDesired: boolean;
  /** The question section as it came, echoed in the answer. */
  question: Buffer;
}

export const DNS_TYPE_A = 1;
const RCODE_REFUSED = 5;
const RCODE_SERVFAIL = 2;
const RCODE_NXDOMAIN = 3;

/** The one question of a standard query, or undefined for anything else (which gets no answer). */
export function parseDnsQuery(message: Buffer): DnsQuestion | undefined {
  if (message.length < 12) return undefined;
  const flags = message.readUInt16BE(2);
  // A query (QR 0), opcode QUERY, exactly one question.
  if (flags & 0x8000 || (flags >> 11) & 0xf || message.readUInt16BE(4) !== 1) return undefined;
  const labels: string[] = [];
  let at = 12;
  for (;;) {
    const length = message[at];
    if (length === undefined || length > 63) return undefined; // compression has no place in a question
    at += 1;
    if (length === 0) break;
    if (at + length > message.length) return undefined;
    labels.push(message.subarray(at, at + length).toString('latin1'));
    at += length;
  }
  if (at + 4 > message.length) return undefined;
  return {
    id: message.readUInt16BE(0),
    name: labels.join('.').toLowerCase(),
    type: message.readUInt16BE(at),
    recursionDesired: (flags & 0x0100) !== 0,
    question: message.subarray(12, at + 4),
  };
}

function header(q: DnsQuestion, rcode: number, answers: number): Buffer {
  const out = Buffer.alloc(12);
  out.writeUInt16BE(q.id, 0);
  // QR, RA, the RD asked for, and the response code.
  out.writeUInt16BE(0x8000 | 0x0080 | (q.recursionDesired ? 0x0100 : 0) | rcode, 2);
  out.writeUInt16BE(1, 4);
  out.writeUInt16BE(answers, 6);
  return out;
}

/** An answer to `q`: these IPv4 addresses as A records (for another type, or none: an empty NOERROR). */
export function dnsAnswer(q: DnsQuestion, addresses: readonly string[], ttlSeconds = 30): Buffer {
  const records = q.type === DNS_TYPE_A ? addresses : [];
  const parts = [header(q, 0, records.length), q.question];
  for (const address of records) {
    const rr = Buffer.alloc(16);
    rr.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
    rr.writeUInt16BE(DNS_TYPE_A, 2);
    rr.writeUInt16BE(1, 4); // IN
    rr.writeUInt32BE(ttlSeconds, 6);
    rr.writeUInt16BE(4, 10);
    for (const [i, octet] of address.split('.').entries()) rr.writeUInt8(Number(octet), 12 + i);
    parts.push(rr);
  }
  return Buffer.concat(parts);
}

/** REFUSED: the name is not the allowlist's (policy, not absence: the name may well exist). */
export function dnsRefused(q: DnsQuestion): Buffer {
  return Buffer.concat([header(q, RCODE_REFUSED, 0), q.question]);
}

/** SERVFAIL: an allowed name berth could not resolve just now. */
export function dnsFailed(q: DnsQuestion): Buffer {
  return Buffer.concat([header(q, RCODE_SERVFAIL, 0), q.question]);
}

/** NXDOMAIN: an allowed name that does not exist. */
export function dnsNoSuchName(q: DnsQuestion): Buffer {
  return Buffer.concat([header(q, RCODE_NXDOMAIN, 0), q.question]);
}
