import { createServer, type Socket } from 'node:net';
import { startDnsResponder } from './dns-responder.js';
import type { ReachableListener } from './options.js';

/**
 * A TCP listener on `host` (an address on this machine: a bridge's gateway, the pods' bridge) that
 * remembers what each connection sent before closing its side, and answers "ok". The network
 * cases send a fresh token from inside a sandbox, so only that sandbox's connection can count.
 * A DNS responder (dns-responder.ts) listens on the same host, on an ephemeral UDP port.
 */
export async function listenForTokens(host: string): Promise<ReachableListener> {
  const received = new Set<string>();
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    let data = '';
    socket.setEncoding('utf8');
    socket.setTimeout(10_000, () => socket.destroy());
    socket.on('data', (chunk: string) => {
      data += chunk.slice(0, 256);
    });
    socket.on('end', () => {
      received.add(data.trim());
      socket.end('ok\n');
    });
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error(`the listener on ${host} has no TCP port`);
  const closeServer = () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    });
  const dns = await startDnsResponder(host).catch(async (error: unknown) => {
    await closeServer();
    throw new Error(`the DNS responder beside the listener on ${host} did not start`, { cause: error });
  });
  return {
    host,
    port: address.port,
    received: (token) => received.has(token),
    dnsPort: dns.port,
    asked: dns.asked,
    close: async () => {
      await Promise.all([closeServer(), dns.close()]);
    },
  };
}
