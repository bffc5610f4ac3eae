import { randomBytes } from 'node:crypto';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect, createServer, type Server } from 'node:tls';
import type { ServerNameListener } from './options.js';

// Allowlists matched on TLS server names (Modal's, an SNI proxy's) only look at connections to
// port 443, so the listener must be there; tests on one machine share the port by taking turns.
const BUSY_WAIT_MS = 120_000;

async function listenOnce(server: Server, host: string, port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => (error.code === 'EADDRINUSE' ? resolve(false) : reject(error));
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve(true);
    });
  });
}

/**
 * A TLS listener on `host`:`port` (default 443) that records the server name of each ClientHello it
 * gets and then refuses the handshake: the allowlist cases send ClientHellos naming fresh names from
 * inside a sandbox, so only that sandbox's connection can count. While another test holds the port
 * it waits its turn (up to 2 minutes).
 */
export async function listenForServerNames(host: string, port = 443): Promise<ServerNameListener> {
  const names = new Set<string>();
  const sockets = new Set<Socket>();
  const server = createServer({
    SNICallback: (name, done) => {
      names.add(name);
      done(new Error('the conformance listener only records server names'));
    },
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('tlsClientError', () => undefined);
  const until = Date.now() + BUSY_WAIT_MS;
  while (!(await listenOnce(server, host, port))) {
    if (Date.now() > until) throw new Error(`${host}:${port} stayed in use for ${BUSY_WAIT_MS / 1000} s: the TLS listener could not take its turn`);
    await sleep(100 + Math.random() * 200);
  }
  return {
    host,
    port,
    received: (name) => names.has(name),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A ClientHello as Node's TLS client writes it, naming `servername`. */
export async function clientHello(servername: string): Promise<Buffer> {
  const capture = createTcpServer();
  const first = new Promise<Buffer>((resolve) =>
    capture.once('connection', (s: Socket) =>
      s.once('data', (d: Buffer) => {
        resolve(d);
        s.destroy();
      }),
    ),
  );
  await new Promise<void>((resolve) => capture.listen(0, '127.0.0.1', resolve));
  const client = connect({ host: '127.0.0.1', port: (capture.address() as AddressInfo).port, servername });
  client.on('error', () => undefined);
  try {
    return await first;
  } finally {
    client.destroy();
    capture.close();
  }
}

/** A fresh name below `domain`, for one probe. */
export const freshName = (domain: string) => `n${randomBytes(5).toString('hex')}.${domain}`;
