import { createServer, type Server, type Socket } from 'node:net';
import type { ExecOptions, ExecResult } from '../contract.js';
import { ConfigError } from '../errors.js';
import type { PortForward } from '../ports.js';

type Exec = (command: readonly string[], opts?: ExecOptions) => Promise<ExecResult>;

/**
 * Inside the sandbox, per connection: stdin to 127.0.0.1:$1 and its answers to stdout, with
 * whichever of nc, python3, bash or perl the image has. Exit 95: none of them.
 */
export const RELAY_SCRIPT = `p="$1"
if command -v nc >/dev/null 2>&1; then exec nc 127.0.0.1 "$p"; fi
if command -v python3 >/dev/null 2>&1; then exec python3 -c '
import socket, sys, threading
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
def up():
    while True:
        b = sys.stdin.buffer.read1(65536)
        if not b: break
        s.sendall(b)
    s.shutdown(socket.SHUT_WR)
threading.Thread(target=up, daemon=True).start()
while True:
    b = s.recv(65536)
    if not b: break
    sys.stdout.buffer.write(b); sys.stdout.buffer.flush()
' "$p"; fi
if command -v bash >/dev/null 2>&1; then exec bash -c 'exec 3<>/dev/tcp/127.0.0.1/$1; cat <&3 & cat >&3; wait' berth-relay "$p"; fi
exit 95`;

/**
 * The sandbox's ports on this machine (Environment.port), for every backend on its exec: a
 * listener on 127.0.0.1 whose every connection is relayed by one exec to 127.0.0.1:<port> inside
 * the sandbox. Nothing crosses the sandbox's network (network 'none' holds): the bytes go through
 * the backend's exec channel (the engine's socket, the API server, Modal's router). Closed at
 * teardown.
 */
export class PortForwards {
  readonly #exec: Exec;
  readonly #open = new Set<{ server: Server; sockets: Set<Socket>; stop: AbortController }>();

  constructor(exec: Exec) {
    this.#exec = exec;
  }

  async open(port: number, where: { backend: string; environmentId: string }): Promise<PortForward> {
    if (!Number.isInteger(port) || port < 1 || port > 65535)
      throw new ConfigError({ operation: 'exec', ...where, path: 'port', message: `port: ${port} is not a TCP port (a whole number 1-65535)` });
    const stop = new AbortController();
    const sockets = new Set<Socket>();
    const server = createServer({ allowHalfOpen: true }, (socket) => {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => sockets.delete(socket));
      const cut = new AbortController();
      socket.on('close', () => cut.abort());
      void this.#exec(['/bin/sh', '-c', RELAY_SCRIPT, 'berth-relay', String(port)], {
        stdin: socket,
        signal: AbortSignal.any([stop.signal, cut.signal]),
        maxOutputBytes: 1,
        onStdout: (chunk) => socket.write(chunk),
      }).then(
        () => socket.end(),
        () => socket.destroy(),
      );
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const entry = { server, sockets, stop };
    this.#open.add(entry);
    const local = (server.address() as { port: number }).port;
    return {
      host: '127.0.0.1',
      port: local,
      remotePort: port,
      close: async () => {
        this.#open.delete(entry);
        await this.#close(entry);
      },
    };
  }

  /** Every forward closed (teardown): listeners and the connections in flight. */
  async closeAll(): Promise<void> {
    const all = [...this.#open];
    this.#open.clear();
    await Promise.all(all.map((e) => this.#close(e)));
  }

  async #close(entry: { server: Server; sockets: Set<Socket>; stop: AbortController }): Promise<void> {
    entry.stop.abort();
    for (const s of entry.sockets) s.destroy();
    await new Promise<void>((resolve) => entry.server.close(() => resolve()));
  }
}
