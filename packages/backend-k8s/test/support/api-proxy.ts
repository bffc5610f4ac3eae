// A loopback proxy between the backend and the test cluster's API server, which the tests steer to
// make API-level faults happen for real: answers of their choosing (429, 500, 403), watches that
// drop or expire, exec sockets cut mid-command, a slow API. Plain HTTP towards the backend (on
// 127.0.0.1 only), TLS with the cluster's CA towards the API server.
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeConfig } from '@kubernetes/client-node';
import { BERTH_KUBECONFIG, KUBE_STATE } from '@berth/test-support/kube-cluster';

const UPSTREAM = { host: '127.0.0.1', port: 6443 };

export interface FaultRule {
  method?: string;
  /** Matched against the path and query, e.g. /\/pods$/ or /watch=true/. */
  path: RegExp;
  /** Answer with this status instead of forwarding... */
  status?: number;
  headers?: Record<string, string>;
  /** ...and this body (a Status object by default). */
  body?: string;
  /** How many matching requests to answer this way; default every one. */
  times?: number;
}

export interface SeenRequest {
  method: string;
  path: string;
  /** The status the client got: the proxy's own for a fault, else the API server's. */
  status: number;
  faulted: boolean;
}

interface Rule extends FaultRule {
  hits: number;
}

export class ApiProxy {
  readonly #server: Server;
  readonly #ca = readFileSync(`${KUBE_STATE}/pki/ca.crt`);
  readonly #rules: Rule[] = [];
  readonly #upgraded = new Set<Socket>();
  readonly #watches = new Set<ServerResponse>();
  /** Every request, in order of arrival. */
  readonly seen: SeenRequest[] = [];
  /** Added before each request is forwarded. */
  delayMs = 0;
  /** Offer the API server only these exec subprotocols (e.g. v4 alone, as a server before 1.30 would speak). */
  execProtocols: readonly string[] | undefined;
  /** Cut an exec connection after this long without a byte either way, as idle-timing load balancers do. */
  execIdleCutMs: number | undefined;

  private constructor(server: Server) {
    this.#server = server;
  }

  static async start(): Promise<ApiProxy> {
    const server = createServer();
    const proxy = new ApiProxy(server);
    server.on('request', (req, res) => void proxy.#onRequest(req, res));
    server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => proxy.#onUpgrade(req, socket, head));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  /** berth's identity (the namespaced service account), talking to the API through this proxy. */
  kubeconfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromFile(BERTH_KUBECONFIG);
    const user = kc.getCurrentUser()!;
    const context = kc.getContextObject(kc.getCurrentContext())!;
    const proxied = new KubeConfig();
    // client-node accepts a plain-HTTP server (this loopback proxy) only with skipTLSVerify.
    proxied.loadFromOptions({
      clusters: [{ name: 'proxied', server: this.url, skipTLSVerify: true }],
      users: [user],
      contexts: [{ name: 'proxied', cluster: 'proxied', user: user.name, namespace: context.namespace }],
      currentContext: 'proxied',
    });
    return proxied;
  }

  /** Answer matching requests with a fault; returns the rule, whose `hits` counts them. */
  fail(rule: FaultRule): { readonly hits: number } {
    const entry: Rule = { ...rule, hits: 0 };
    this.#rules.push(entry);
    return entry;
  }

  clearFaults(): void {
    this.#rules.length = 0;
    this.delayMs = 0;
    this.execIdleCutMs = undefined;
    this.execProtocols = undefined;
  }

  /** Cut every exec (upgraded) connection now, as a load balancer or a restarting API server would. */
  cutExecs(): number {
    const n = this.#upgraded.size;
    for (const socket of this.#upgraded) socket.destroy();
    return n;
  }

  /** Drop every open watch now (the connection ends without a word). */
  dropWatches(): number {
    const n = this.#watches.size;
    for (const res of this.#watches) res.destroy();
    return n;
  }

  get openExecs(): number {
    return this.#upgraded.size;
  }

  async close(): Promise<void> {
    this.cutExecs();
    this.dropWatches();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #match(req: IncomingMessage): Rule | undefined {
    const rule = this.#rules.find(
      (r) => (r.method === undefined || r.method === req.method) && r.path.test(req.url ?? '') && (r.times === undefined || r.hits < r.times),
    );
    if (rule) rule.hits++;
    return rule;
  }

  async #onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? 'GET';
    const path = req.url ?? '/';
    if (this.delayMs) await sleep(this.delayMs);
    const rule = this.#match(req);
    if (rule?.status !== undefined) {
      req.resume();
      this.seen.push({ method, path, status: rule.status, faulted: true });
      const body =
        rule.body ??
        JSON.stringify({
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          message: `fault injected by the test proxy (${rule.status})`,
          code: rule.status,
        });
      res.writeHead(rule.status, { 'content-type': 'application/json', ...rule.headers });
      res.end(body);
      return;
    }
    const upstream = httpsRequest(
      { ...UPSTREAM, ca: this.#ca, method, path, headers: { ...req.headers, host: `${UPSTREAM.host}:${UPSTREAM.port}` } },
      (answer) => {
        this.seen.push({ method, path, status: answer.statusCode ?? 0, faulted: false });
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        if (/[?&]watch=(true|1)/.test(path)) {
          this.#watches.add(res);
          res.on('close', () => this.#watches.delete(res));
        }
        answer.pipe(res);
        res.on('close', () => answer.destroy());
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  }

  #onUpgrade(req: IncomingMessage, socket: Socket, head: Buffer): void {
    const method = req.method ?? 'GET';
    const path = req.url ?? '/';
    const rule = this.#match(req);
    if (rule?.status !== undefined) {
      this.seen.push({ method, path, status: rule.status, faulted: true });
      const body =
        rule.body ?? JSON.stringify({ kind: 'Status', status: 'Failure', message: `fault injected by the test proxy (${rule.status})`, code: rule.status });
      socket.end(
        `HTTP/1.1 ${rule.status} Fault\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
      return;
    }
    this.seen.push({ method, path, status: 101, faulted: false });
    const upstream = tlsConnect({ ...UPSTREAM, ca: this.#ca, ALPNProtocols: ['http/1.1'] }, () => {
      const lines = [`${method} ${path} HTTP/1.1`];
      for (let i = 0; i < req.rawHeaders.length; i += 2) {
        const name = req.rawHeaders[i]!;
        let value = req.rawHeaders[i + 1]!;
        if (name.toLowerCase() === 'host') value = `${UPSTREAM.host}:${UPSTREAM.port}`;
        if (name.toLowerCase() === 'sec-websocket-protocol' && this.execProtocols) {
          value = value
            .split(',')
            .map((p) => p.trim())
            .filter((p) => this.execProtocols!.includes(p))
            .join(', ');
        }
        lines.push(`${name}: ${value}`);
      }
      upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (head.length) upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    if (this.execIdleCutMs !== undefined) {
      socket.setTimeout(this.execIdleCutMs, () => socket.destroy());
      upstream.on('data', () => socket.setTimeout(this.execIdleCutMs ?? 0));
    }
    this.#upgraded.add(socket);
    const end = () => {
      this.#upgraded.delete(socket);
      socket.destroy();
      upstream.destroy();
    };
    socket.on('close', end);
    socket.on('error', end);
    upstream.on('close', end);
    upstream.on('error', end);
  }
}
