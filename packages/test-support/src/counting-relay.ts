// A TCP relay on a loopback port in front of a server (an API server): how many connections a
// client made through it, and the most open at once. TLS passes through untouched, so the client
// checks the server's certificate as usual.
import { createConnection, createServer, type AddressInfo } from 'node:net';

export interface CountingRelay {
  port: number;
  connections(): number;
  peak(): number;
  close(): void;
}

export async function countingRelay(target: { host: string; port: number }): Promise<CountingRelay> {
  let connections = 0;
  let open = 0;
  let peak = 0;
  const server = createServer((client) => {
    connections++;
    peak = Math.max(peak, ++open);
    client.once('close', () => open--);
    const upstream = createConnection(target);
    client.pipe(upstream).pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, connections: () => connections, peak: () => peak, close: () => server.close() };
}
