import { connect, type Socket } from 'node:net';
import { Readable } from 'node:stream';

/** Where the engine listens, when berth can talk to it with a plain socket (not TLS, not SSH). */
export type PlainAddress = { socketPath: string } | { host: string; port: number };

/**
 * Reads land one after another in a slab: what a read brought is handed on as a view of it, never
 * copied (copying each read was most of the CPU of a big download), and a new slab is taken when
 * less than MIN_READ is left. A slab is freed once everything viewing it has been written.
 */
const SLAB = 1 << 20;
const MIN_READ = 64 << 10;
/** What the Readable holds before the socket is paused (the consumer writes it to disk meanwhile). */
const QUEUE_BYTES = 8 << 20;

/** Shaped like docker-modem's errors, so the backend's mapping reads it the same way. */
function apiError(status: number, body: string): Error & { statusCode: number; json: unknown } {
  let json: unknown = body;
  try {
    json = JSON.parse(body);
  } catch {
    // not JSON: the text stands
  }
  const said = json && typeof json === 'object' && typeof (json as { message?: unknown }).message === 'string' ? (json as { message: string }).message : body;
  return Object.assign(new Error(`(HTTP code ${status}) unexpected - ${said}`), { statusCode: status, json });
}

/**
 * The engine's archive of a path (GET /containers/{id}/archive), read without node:http: one
 * socket, reads into 1 MiB slabs (`onread`), chunked encoding decoded in place, the body handed
 * on as views of the slabs as it comes, with backpressure. Measured on a 150 MiB file this took a quarter
 * of the wall time and a third of the CPU off the dockerode path, most of which was node:http's
 * parser and its per-chunk objects (bench/docker-download.mjs). Resolves undefined on 404 (a
 * missing path, or container: the kit's liveness check tells them apart); rejects with the
 * engine's error otherwise.
 */
export function getArchive(address: PlainAddress, apiPath: string, signal?: AbortSignal): Promise<Readable | undefined> {
  return new Promise((resolve, reject) => {
    let slab = Buffer.allocUnsafe(SLAB);
    let used = 0;
    let head = Buffer.alloc(0);
    let status = 0;
    let chunked = false;
    let remaining = Number.POSITIVE_INFINITY; // Content-Length, when given
    let chunkLeft = 0; // bytes of the current chunk still to come
    let sizeLine = ''; // a chunk-size line cut by a read
    let skip = 0; // the CRLF after a chunk's data
    let finished = false;
    let errorBody = '';
    let body: Readable | undefined;
    const fail = (error: Error) => {
      if (body) body.destroy(error);
      else reject(error);
      socket.destroy();
    };
    const end = () => {
      if (finished) return;
      finished = true;
      if (!body) return;
      body.push(null);
    };
    // Body bytes, decoded: to the Readable (a view of the slab) or, for an error, kept.
    const deliver = (bytes: Buffer) => {
      if (bytes.length === 0) return;
      if (status !== 200) {
        errorBody += bytes.toString('utf8');
        return;
      }
      if (!body!.push(bytes)) socket.pause();
    };
    const decode = (data: Buffer) => {
      if (!chunked) {
        const n = Math.min(remaining, data.length);
        deliver(data.subarray(0, n));
        remaining -= n;
        if (remaining === 0) end();
        return;
      }
      let i = 0;
      while (i < data.length && !finished) {
        if (chunkLeft > 0) {
          const n = Math.min(chunkLeft, data.length - i);
          deliver(data.subarray(i, i + n));
          chunkLeft -= n;
          i += n;
          if (chunkLeft === 0) skip = 2;
          continue;
        }
        if (skip > 0) {
          const n = Math.min(skip, data.length - i);
          skip -= n;
          i += n;
          continue;
        }
        const nl = data.indexOf(10, i);
        if (nl < 0) {
          sizeLine += data.toString('latin1', i);
          return;
        }
        sizeLine += data.toString('latin1', i, nl);
        i = nl + 1;
        const size = Number.parseInt(sizeLine.trim(), 16);
        sizeLine = '';
        if (!Number.isFinite(size)) return fail(new Error('the Docker engine sent a malformed chunked body'));
        if (size === 0) end();
        else chunkLeft = size;
      }
    };
    const onHead = (text: string) => {
      const [statusLine = '', ...headers] = text.split('\r\n');
      status = Number(statusLine.split(' ')[1]);
      for (const h of headers) {
        const colon = h.indexOf(':');
        const name = h.slice(0, colon).trim().toLowerCase();
        const value = h.slice(colon + 1).trim();
        if (name === 'transfer-encoding' && /chunked/i.test(value)) chunked = true;
        if (name === 'content-length') remaining = Number(value);
      }
      if (status === 200) {
        body = new Readable({ highWaterMark: QUEUE_BYTES, read: () => socket.resume() });
        body.on('close', () => socket.destroy());
        resolve(body);
      }
    };
    const socket: Socket = connect({
      ...('socketPath' in address ? { path: address.socketPath } : { host: address.host, port: address.port }),
      onread: {
        buffer: () => {
          if (SLAB - used < MIN_READ) {
            slab = Buffer.allocUnsafe(SLAB);
            used = 0;
          }
          return slab.subarray(used);
        },
        callback: (n, buf) => {
          let data = (buf as Buffer).subarray(0, n);
          used += n;
          if (status === 0) {
            head = Buffer.concat([head, data]);
            const at = head.indexOf('\r\n\r\n');
            if (at < 0) return true;
            onHead(head.toString('latin1', 0, at));
            data = head.subarray(at + 4);
          }
          decode(data);
          return true;
        },
      },
    });
    socket.on('connect', () => socket.write(`GET ${apiPath} HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n\r\n`));
    socket.on('error', (error) => fail(error));
    socket.on('end', () => {
      if (status === 0) return fail(new Error('the Docker engine closed the connection before answering'));
      if (status === 404) return resolve(undefined);
      if (status !== 200) return fail(apiError(status, errorBody));
      if (!finished) fail(Object.assign(new Error('the Docker engine ended the archive early'), { code: 'ECONNRESET' }));
    });
    if (signal) {
      const abort = () => fail(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
      if (signal.aborted) abort();
      else {
        signal.addEventListener('abort', abort, { once: true });
        socket.on('close', () => signal.removeEventListener('abort', abort));
      }
    }
  });
}

/** The modem's view of where the engine is (docker-modem's fields). */
interface ModemLike {
  socketPath?: string | (() => string | Promise<string>);
  host?: string;
  port?: number | string;
  protocol?: string;
  version?: string;
  pathPrefix?: string;
  headers?: Record<string, string>;
  username?: string;
}

/**
 * The engine's address when a plain socket reaches it as dockerode would: a unix socket, or
 * plain-HTTP TCP. Anything else (TLS, SSH, a path prefix, extra headers, basic auth) is
 * undefined: dockerode's own path then serves.
 */
export async function plainAddress(modem: ModemLike): Promise<PlainAddress | undefined> {
  if (modem.pathPrefix || modem.username || (modem.headers && Object.keys(modem.headers).length > 0)) return undefined;
  if (modem.socketPath) {
    const path = typeof modem.socketPath === 'function' ? await modem.socketPath() : modem.socketPath;
    return typeof path === 'string' && path.startsWith('/') ? { socketPath: path } : undefined;
  }
  if (modem.host && (modem.protocol ?? 'http') === 'http') return { host: modem.host, port: Number(modem.port ?? 2375) };
  return undefined;
}

/** The archive API's path for a container and a path in it, with the modem's API version when it has one. */
export function archivePath(modem: ModemLike, container: string, remotePath: string): string {
  return `${modem.version ? `/${modem.version}` : ''}/containers/${encodeURIComponent(container)}/archive?path=${encodeURIComponent(remotePath)}`;
}
