import { isIP } from 'node:net';

// An allowlist's entries classified and matched, without zod: the egress proxy pod's program
// (@berth/backend-k8s) bundles this module, and nothing more of core's.

/**
 * An egress allowlist: the sandbox may open connections only to what `allow` lists (and loopback).
 * Entries are harbor's kinds: a hostname (`example.com`), a leading wildcard (`*.example.com`: any
 * name under example.com, at any depth, not example.com itself), an IPv4 address, an IPv4 CIDR
 * range. No ports, URLs or paths. An empty list lets nothing out, as 'none' does.
 */
export interface NetworkAllowlist {
  readonly allow: readonly string[];
}

/** One allowlist entry, classified. */
export type AllowEntry =
  | { kind: 'host'; host: string }
  | { kind: 'wildcard'; suffix: string }
  | { kind: 'address'; address: string }
  | { kind: 'range'; cidr: string; address: string; prefix: number };

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const NO_URLS = 'entries are hostnames, *.domain wildcards, IPv4 addresses or IPv4 CIDR ranges, not URLs, ports or paths';

/** harbor's normalisation: trimmed, lower case, without a trailing dot. */
export function normaliseAllowEntry(entry: string): string {
  return entry.trim().toLowerCase().replace(/\.$/, '');
}

function ipv4Number(address: string): number {
  return address.split('.').reduce((n, octet) => n * 256 + Number(octet), 0);
}

function hostProblem(host: string): string | undefined {
  if (host.length > 253) return 'a hostname is at most 253 characters';
  if (!host.split('.').every((label) => LABEL.test(label))) return 'a hostname is labels of letters, digits and inner hyphens, joined by dots';
  return undefined;
}

/**
 * Classify one (normalised) entry, or say what is wrong with it and how to write it instead. IPv6
 * is refused by name: no backend's enforcement covers it, and a task asking for it must not run
 * with a narrower network than it asked for.
 */
export function parseAllowEntry(raw: string): AllowEntry | { problem: string } {
  const entry = normaliseAllowEntry(raw);
  if (entry === '') return { problem: 'an entry is empty' };
  if (/^[a-z][a-z0-9+.-]*:\/\//.test(entry) || entry.includes('[') || entry.includes(']')) return { problem: `"${entry}": ${NO_URLS}` };
  if (entry.includes('/')) {
    const [address = '', prefixText = '', ...rest] = entry.split('/');
    if (isIP(address) === 6) return { problem: `"${entry}": IPv6 ranges are not supported; list IPv4 ranges` };
    const prefix = Number(prefixText);
    if (rest.length > 0 || isIP(address) !== 4 || !/^\d{1,2}$/.test(prefixText) || prefix > 32) return { problem: `"${entry}": ${NO_URLS}` };
    const hostBits = prefix === 0 ? ipv4Number(address) : ipv4Number(address) % 2 ** (32 - prefix);
    if (hostBits !== 0) return { problem: `"${entry}": the range has host bits set; write the network address (e.g. ${networkOf(address, prefix)}/${prefix})` };
    return { kind: 'range', cidr: `${address}/${prefix}`, address, prefix };
  }
  if (isIP(entry) === 4) return { kind: 'address', address: entry };
  if (isIP(entry) === 6) return { problem: `"${entry}": IPv6 addresses are not supported; list IPv4 addresses or hostnames` };
  if (entry.includes(':')) return { problem: `"${entry}": ${NO_URLS} (a port cannot be listed: an entry allows every port)` };
  if (entry.startsWith('*.')) {
    const suffix = entry.slice(2);
    if (suffix === '' || suffix.includes('*')) return { problem: `"${entry}": a wildcard is one leading "*." before a domain` };
    if (isIP(suffix) !== 0 || /^[\d.]+$/.test(suffix)) return { problem: `"${entry}": a wildcard names a domain, not an IP address` };
    const problem = hostProblem(suffix);
    return problem ? { problem: `"${entry}": ${problem}` } : { kind: 'wildcard', suffix };
  }
  if (entry.includes('*')) return { problem: `"${entry}": a wildcard is one leading "*." before a domain (e.g. *.example.com)` };
  // 999.1.1.1 is no address; harbor would take it for a hostname, which no resolver answers.
  if (/^[\d.]+$/.test(entry)) return { problem: `"${entry}": not an IPv4 address (four numbers 0-255)` };
  const problem = hostProblem(entry);
  return problem ? { problem: `"${entry}": ${problem}` } : { kind: 'host', host: entry };
}

function networkOf(address: string, prefix: number): string {
  const n = prefix === 0 ? 0 : ipv4Number(address) - (ipv4Number(address) % 2 ** (32 - prefix));
  return [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join('.');
}

/** The entries of a validated allowlist, classified. */
export function allowEntries(allowlist: NetworkAllowlist): AllowEntry[] {
  return allowlist.allow.map((entry) => {
    const parsed = parseAllowEntry(entry);
    if ('problem' in parsed) throw new Error(`unreachable: a validated allowlist holds "${entry}" (${parsed.problem})`);
    return parsed;
  });
}

/** Does `name` match a host or wildcard entry? (a wildcard matches below its domain, not the domain itself) */
export function nameAllowed(name: string, entries: readonly AllowEntry[]): boolean {
  const host = normaliseAllowEntry(name);
  return entries.some((e) => (e.kind === 'host' && e.host === host) || (e.kind === 'wildcard' && host.endsWith(`.${e.suffix}`)));
}

/** Is an IPv4 `address` inside an address or range entry? */
export function addressAllowed(address: string, entries: readonly AllowEntry[]): boolean {
  if (isIP(address) !== 4) return false;
  const n = ipv4Number(address);
  return entries.some(
    (e) =>
      (e.kind === 'address' && e.address === address) ||
      (e.kind === 'range' && (e.prefix === 0 || Math.floor(n / 2 ** (32 - e.prefix)) === Math.floor(ipv4Number(e.address) / 2 ** (32 - e.prefix)))),
  );
}

/** Is a network an allowlist (rather than 'public' or 'none')? */
export function isAllowlist(network: unknown): network is NetworkAllowlist {
  return typeof network === 'object' && network !== null && Array.isArray((network as NetworkAllowlist).allow);
}

/** A network in words, for messages and events: 'public', 'none', or "allowlist (3 entries)". */
export function describeNetwork(network: 'public' | 'none' | NetworkAllowlist): string {
  if (!isAllowlist(network)) return `'${network}'`;
  return `an allowlist (${network.allow.length === 0 ? 'empty' : network.allow.join(', ')})`;
}
