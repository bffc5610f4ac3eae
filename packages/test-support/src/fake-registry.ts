// A registry that misbehaves on purpose, on loopback: the Docker engine really talks to it, so
// the backend sees the engine's real error text for a 5xx, a 429 or a stall.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type RegistryFault = 'server-error' | 'rate-limited' | 'stall';

export interface FakeRegistry {
  host: string;
  requests: string[];
  close(): Promise<void>;
}

export async function startFakeRegistry(fault: RegistryFault): Promise<FakeRegistry> {
  const requests: string[] = [];
  const stalled: ServerResponse[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    requests.push(`${req.method} ${req.url}`);
    if (req.url === '/v2/' || req.url === '/v2') {
      res.writeHead(200, { 'content-type': 'application/json', 'docker-distribution-api-version': 'registry/2.0' });
      res.end('{}');
      return;
    }
    if (fault === 'server-error') {
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end('{"errors":[{"code":"UNAVAILABLE","message":"service unavailable"}]}');
    } else if (fault === 'rate-limited') {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '7' });
      res.end('{"errors":[{"code":"TOOMANYREQUESTS","message":"You have reached your pull rate limit."}]}');
    } else {
      stalled.push(res); // never answer
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    host: `127.0.0.1:${port}`,
    requests,
    close: async () => {
      for (const res of stalled) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
