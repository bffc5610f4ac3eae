// The DNS responder beside the conformance token listener, asked by Node's own resolver on
// loopback: the positive control of "DNS fails on network 'none'" rests on it answering.
import { Resolver } from 'node:dns/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { DNS_ZONE, startDnsResponder } from '../src/dns-responder.js';

const responder = await startDnsResponder('127.0.0.1');
afterAll(() => responder.close());
const resolver = new Resolver({ timeout: 2_000, tries: 1 });
resolver.setServers([`127.0.0.1:${responder.port}`]);

describe('dns responder', () => {
  it('answers an A query in its zone with its host, and remembers the name asked', async () => {
    const name = `Fresh-1.${DNS_ZONE}`;
    expect(responder.asked(name)).toBe(false);
    expect(await resolver.resolve4(name)).toEqual(['127.0.0.1']);
    expect(responder.asked(name)).toBe(true);
    expect(responder.asked(`other.${DNS_ZONE}`)).toBe(false);
  });

  it('has no other records in its zone, and nothing outside it (NXDOMAIN)', async () => {
    await expect(resolver.resolve6(`fresh-2.${DNS_ZONE}`)).rejects.toMatchObject({ code: 'ENODATA' });
    await expect(resolver.resolve4('fresh-3.example.invalid')).rejects.toMatchObject({ code: 'ENOTFOUND' });
    expect(responder.asked('fresh-3.example.invalid')).toBe(true);
  });
});
