import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { type AllowEntry, nameAllowed } from '../allow-entries.js';
import type { HostResolver } from './allowlist-blocks.js';
import { httpHost, tlsServerName } from './connection-names.js';
import { dnsAnswer, dnsFailed, dnsNoSuchName, dnsRefused, parseDnsQuery } from './dns-message.js';

/** Where a sandbox's redirected traffic goes: one address, a port each for TLS (443), HTTP (80) and DNS (53). */
export interface EgressProxyPorts {
  host: string;
  tls: number;
  http: number;
  dns: number;
}

/** What a source may reach: its allowlist's names and wildcards, and how the proxy resolves them. */
export interface EgressAdmission {
  entries: readonly AllowEntry[];
  resolve: HostResolver;
}

export interface EgressProxyListenOptions {
  /** Fixed ports, for sandboxes that reach the proxy through DNS rather than a redirect (443, 80, 53); free ports by default. */
  ports?: Omit<EgressProxyPorts, 'host'>;
  /**
   * Answer an allowed name's A query with this address (the proxy's own, so clients connect to
   * the proxy) rather than the name's own addresses; a name that does not resolve is still NXDOMAIN.
   */
  answerWith?: string;
  /** Where a source's admission is looked up at each connection and query, instead of admit()'s. */
  admissions?: (source: string) => EgressAdmission | undefined;
}

/** How long a client has to send what names its destination. */
const FIRST_BYTES_MS = 10_000;
const UPSTREAM_CONNECT_MS = 10_000;
const MAX_FIRST_BYTES = 65_536;

/**
 * berth's egress proxy, for backends that match an allowlist's names and wildcards by name rather
 * than by the addresses berth resolved (Docker): the backend redirects a sandbox's TCP 443, TCP 80
 * and DNS here, and the proxy lets through what the sandbox's allowlist names. A TLS connection
 * passes when its ClientHello's server name is allowed, an HTTP request when its Host is, and the
 * proxy connects to that name as the runner resolves it (options.resolveHost, else its resolver),
 * never to the address the client aimed at, so an allowed name cannot be fronted onto another host.
 * Nothing is decrypted: the client's bytes go through as they came. A DNS query is answered for
 * allowed names (their IPv4 addresses) and refused for the rest. Sandboxes are told apart by their
 * source address; a source no sandbox holds gets nothing. The servers do not keep the process alive.
 * Kubernetes runs it in a pod of its own (options.answerWith, fixed ports): sandboxes reach it
 * because its DNS answers send them there, not through a redirect.
 */
export class EgressProxy {
  readonly ports: EgressProxyPorts;
  readonly #servers: Server[];
  readonly #dns: UdpSocket;
  readonly #admitted = new Map<string, EgressAdmission>();
  readonly #sockets = new Set<Socket>();
  readonly #options: EgressProxyListenOptions;

  private constructor(ports: EgressProxyPorts, servers: Server[], dns: UdpSocket, options: EgressProxyListenOptions) {
    this.ports = ports;
    this.#servers = servers;
    this.#dns = dns;
    this.#options = options;
  }

  /** Listens on `host` (an address the sandboxes reach and nothing else should: a bridge's gateway), on free ports unless `options.ports`. */
  static async listen(host: string, options: EgressProxyListenOptions = {}): Promise<EgressProxy> {
    let proxy: EgressProxy | undefined;
    // Until the proxy exists (the ports known), a connection has nothing to check it: it is closed.
    // Half-open: a client may send its request and its FIN at once (nc does), and still wait for the answer.
    const tls = createServer({ allowHalfOpen: true }, (s) => (proxy ? proxy.#connection(s, 'tls') : s.destroy()));
    const http = createServer({ allowHalfOpen: true }, (s) => (proxy ? proxy.#connection(s, 'http') : s.destroy()));
    const dns = createSocket('udp4');
    const listen = (server: Server, port: number) =>
      new Promise<number>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => resolve((server.address() as { port: number }).port));
      });
    try {
      const [tlsPort, httpPort, dnsPort] = await Promise.all([
        listen(tls, options.ports?.tls ?? 0),
        listen(http, options.ports?.http ?? 0),
        new Promise<number>((resolve, reject) => {
          dns.once('error', reject);
          dns.bind(options.ports?.dns ?? 0, host, () => resolve(dns.address().port));
        }),
      ]);
      proxy = new EgressProxy({ host, tls: tlsPort, http: httpPort, dns: dnsPort }, [tls, http], dns, options);
    } catch (error) {
      tls.close();
      http.close();
      dns.close();
      throw error;
    }
    for (const server of [tls, http]) server.unref();
    dns.unref();
    const ready = proxy;
    dns.on('message', (message, from) => void ready.#query(message, from.address, from.port));
    return ready;
  }

  /** Lets `source`'s connections through by `entries`' names and wildcards (replacing what it had); the returned function withdraws it. */
  admit(source: string, entries: readonly AllowEntry[], resolve: HostResolver): () => void {
    const admitted = { entries, resolve };
    this.#admitted.set(source, admitted);
    return () => {
      if (this.#admitted.get(source) === admitted) this.#admitted.delete(source);
    };
  }

  async close(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    await Promise.all(this.#servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
    await new Promise<void>((resolve) => this.#dns.close(() => resolve()));
  }

  #allowed(source: string | undefined, name: string | undefined): EgressAdmission | undefined {
    const lookup = this.#options.admissions ?? ((s: string) => this.#admitted.get(s));
    const admitted = source === undefined ? undefined : lookup(source);
    return admitted && name && nameAllowed(name, admitted.entries) ? admitted : undefined;
  }

  #connection(client: Socket, kind: 'tls' | 'http'): void {
    this.#sockets.add(client);
    client.on('close', () => this.#sockets.delete(client));
    client.on('error', () => undefined);
    const timer = setTimeout(() => client.destroy(), FIRST_BYTES_MS);
    let first = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      first = Buffer.concat([first, chunk]);
      const name = kind === 'tls' ? tlsServerName(first) : httpHost(first);
      if (name === 'incomplete' && first.length < MAX_FIRST_BYTES) return;
      client.off('data', onData);
      client.pause();
      clearTimeout(timer);
      const admitted = name === 'incomplete' || name === 'invalid' ? undefined : this.#allowed(client.remoteAddress, name);
      if (!admitted || !name || name === 'incomplete' || name === 'invalid') {
        client.destroy();
        return;
      }
      void this.#forward(client, first, name, kind === 'tls' ? 443 : 80, admitted.resolve);
    };
    client.on('data', onData);
  }

  /** Connects to `name` as the runner resolves it, writes what the client sent first, then relays both ways. */
  async #forward(client: Socket, first: Buffer, name: string, port: number, resolve: HostResolver): Promise<void> {
    const addresses = await resolve(name).catch(() => [] as readonly string[]);
    for (const address of addresses) {
      if (client.destroyed) return;
      const upstream = await new Promise<Socket | undefined>((done) => {
        const s = connect({ host: address, port, timeout: UPSTREAM_CONNECT_MS, allowHalfOpen: true });
        s.once('connect', () => {
          s.setTimeout(0);
          done(s);
        });
        s.once('timeout', () => {
          s.destroy();
          done(undefined);
        });
        s.once('error', () => done(undefined));
      });
      if (!upstream) continue;
      this.#sockets.add(upstream);
      upstream.on('close', () => {
        this.#sockets.delete(upstream);
        client.destroy();
      });
      upstream.on('error', () => undefined);
      client.on('close', () => upstream.destroy());
      upstream.write(first);
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
      return;
    }
    client.destroy();
  }

  async #query(message: Buffer, from: string, port: number): Promise<void> {
    const q = parseDnsQuery(message);
    if (!q) return;
    const admitted = this.#allowed(from, q.name);
    let answer: Buffer;
    if (!admitted) answer = dnsRefused(q);
    else {
      const own = this.#options.answerWith;
      answer = await admitted.resolve(q.name).then(
        (addresses) => dnsAnswer(q, own && addresses.length > 0 ? [own] : addresses),
        (error: { code?: unknown }) => (error?.code === 'ENOTFOUND' || error?.code === 'ENODATA' ? dnsNoSuchName(q) : dnsFailed(q)),
      );
    }
    this.#dns.send(answer, port, from);
  }
}

/**
 * A sandbox's resolv.conf under berth's egress proxy: the proxy's address as its only resolver,
 * the search and options lines of `current` (what the engine or kubelet wrote) kept, or with
 * `search: false` none (a cluster's search domains and ndots:5 would send every name to the
 * proxy under suffixes it refuses first).
 */
export function resolvConfAt(current: string, host: string, opts: { search?: boolean } = {}): string {
  const kept = opts.search === false ? [] : current.split('\n').filter((line) => /^\s*(search|domain|options)\s/.test(line));
  return `nameserver ${host}\n${kept.map((l) => `${l}\n`).join('')}`;
}
