import { PassThrough, Writable } from 'node:stream';
import type https from 'node:https';
import type { ProcessExit, ProcessRequest, SandboxProcess } from '@berth/core/backend-kit';
import type { Cluster } from './cluster.js';
import { CONTAINER } from './pod-manifest.js';
import { ExecSocket, type ExecSocketHandlers } from './exec-websocket.js';
import { StdinFramer, framedStdinPrologue } from './stdin-v4.js';

// The exec subresource over a WebSocket: every frame starts with its channel (0 stdin, 1 stdout,
// 2 stderr, 3 the final Status, 4 a terminal's size, 255 close a channel: v5 only). v5.channel.k8s.io
// lets berth close stdin; v4 cannot, so on a v4-only server stdin is framed (stdin-v4.ts). With a
// terminal (tty=true) everything the command writes comes on stdout, and stdin is typed bytes:
// never framed, never closed (a terminal has no end of input).

const V5 = 'v5.channel.k8s.io';
const V4 = 'v4.channel.k8s.io';
const PROTOCOLS = [V5, V4];
const STDIN = 0;
const STDOUT = 1;
const STDERR = 2;
const STATUS = 3;
const RESIZE = 4;
const CLOSE = 255;
/** The API server takes frames up to this size; larger writes are split. */
const MAX_FRAME = 1024 * 1024;
/** The final Status is a small JSON object; more than this is not read. */
const MAX_STATUS = 64 * 1024;
/** How far a reader may fall behind before the socket is paused. */
const OUTPUT_BUFFER = 32 * 1024 * 1024;

/** The exec API has no environment parameter: the command exports it in a small sh prologue. */
const EXPORTS = 'while [ "$#" -gt 0 ] && [ "$1" != -- ]; do export "$1"; shift; done; shift';
const ENV_PROLOGUE = `${EXPORTS}; exec "$@"`;
/**
 * With stdin, what the command leaves unread is drained before the exit status is given: when a
 * command stops reading early, the API server otherwise stops forwarding stdin and never sends the
 * final Status (measured on 1.34: a hang, or a reset that loses the Status).
 */
const STDIN_PROLOGUE = `${EXPORTS}; "$@"; rc=$?; cat >/dev/null 2>&1; exit $rc`;

function execUrl(cluster: Cluster, pod: string, argv: readonly string[], stdin: boolean, tty: boolean): string {
  // A terminal merges stderr into stdout: kubectl asks for no stderr stream with one, and so does berth.
  const query = new URLSearchParams({ container: CONTAINER, stdout: 'true', stderr: String(!tty), stdin: String(stdin), tty: String(tty) });
  for (const arg of argv) query.append('command', arg);
  const base = cluster.server.replace(/^http/, 'ws');
  return `${base}/api/v1/namespaces/${encodeURIComponent(cluster.namespace)}/pods/${encodeURIComponent(pod)}/exec?${query.toString()}`;
}

/** The exit code in the final Status frame: Success is 0, NonZeroExitCode carries it; anything else is undefined. */
export function exitCodeOf(status: {
  status?: string;
  reason?: string;
  details?: { causes?: Array<{ reason?: string; message?: string }> };
}): number | undefined {
  if (status.status === 'Success') return 0;
  if (status.reason !== 'NonZeroExitCode') return undefined;
  const cause = status.details?.causes?.find((c) => c.reason === 'ExitCode');
  const code = Number(cause?.message);
  return Number.isInteger(code) ? code : undefined;
}

/** Open an exec connection; the server's choice of subprotocol is remembered for the cluster. */
async function connect(
  cluster: Cluster,
  pod: string,
  argv: readonly string[],
  stdin: boolean,
  protocols: readonly string[],
  handlers: ExecSocketHandlers,
  tty = false,
): Promise<ExecSocket> {
  const request: https.RequestOptions = {};
  await cluster.kc.applyToHTTPSOptions(request);
  const socket = await ExecSocket.connect({ url: execUrl(cluster, pod, argv, stdin, tty), protocols, request }, handlers);
  cluster.execProtocol = socket.protocol;
  return socket;
}

/**
 * Which subprotocol does the server speak? Asked with a harmless `true` before the first command
 * with stdin, since the command line (with or without framing) is sent before the server answers.
 */
async function learnProtocol(cluster: Cluster, pod: string): Promise<void> {
  let closed!: () => void;
  const ended = new Promise<void>((resolve) => (closed = resolve));
  await connect(cluster, pod, ['true'], false, PROTOCOLS, { data: () => undefined, close: () => closed() });
  await ended;
}

/** Start one process in the pod's container through the exec subresource. */
export async function spawnExec(cluster: Cluster, pod: string, request: ProcessRequest): Promise<SandboxProcess> {
  const tty = request.tty;
  // A terminal's input is never closed, so neither framing nor draining applies to it.
  const closable = request.stdin && !tty;
  if (closable && cluster.execProtocol === undefined) await learnProtocol(cluster, pod);
  const framed = closable && cluster.execProtocol === V4;
  const pairs = Object.entries(request.env).map(([k, v]) => `${k}=${v}`);
  const argv = closable
    ? ['/bin/sh', '-c', framed ? framedStdinPrologue(EXPORTS) : STDIN_PROLOGUE, 'berth-exec', ...pairs, '--', ...request.argv]
    : pairs.length
      ? ['/bin/sh', '-c', ENV_PROLOGUE, 'berth-exec', ...pairs, '--', ...request.argv]
      : request.argv;
  // Deep buffers: the socket is paused only when a reader falls far behind. A paused socket makes
  // the API server (1.34, measured) close after the exit status without sending the rest of
  // stdout; the kit's transfers detect that, and a deep buffer makes it rare.
  const stdout = new PassThrough({ highWaterMark: OUTPUT_BUFFER });
  const stderr = new PassThrough({ highWaterMark: OUTPUT_BUFFER });
  let status: ProcessExit | undefined;
  let statusText = '';
  let paused = false;
  let socket: ExecSocket | undefined;
  const push = (target: PassThrough, data: Buffer) => {
    if (target.write(data) || paused || !socket) return;
    paused = true;
    socket.pause();
    target.once('drain', () => {
      paused = false;
      socket?.resume();
    });
  };
  let resolveExit!: (exit: ProcessExit) => void;
  const exit = new Promise<ProcessExit>((resolve) => (resolveExit = resolve));
  let keepAlive: NodeJS.Timeout | undefined;
  const handlers: ExecSocketHandlers = {
    data(channel, data, end) {
      switch (channel) {
        case STDOUT:
          if (data.length) push(stdout, data);
          break;
        case STDERR:
          if (data.length) push(stderr, data);
          break;
        case STATUS:
          if (statusText.length < MAX_STATUS) statusText += data.toString('utf8');
          if (end) {
            try {
              const code = exitCodeOf(JSON.parse(statusText) as Parameters<typeof exitCodeOf>[0]);
              status = { code: code ?? null };
            } catch {
              status = { code: null };
            }
          }
          break;
      }
    },
    close() {
      clearInterval(keepAlive);
      stdout.end();
      stderr.end();
      // Closed without a Status frame: the kit asks the pod whether it is still there.
      resolveExit(status ?? { code: null, interrupted: true });
    },
  };
  socket = await connect(cluster, pod, argv, request.stdin, framed ? [V4] : PROTOCOLS, handlers, tty !== undefined);
  const ws = socket;
  const v5 = ws.protocol === V5;
  // The size goes on the resize channel once the stream is up; the kit's argv waits for it.
  if (tty) ws.send(Buffer.concat([Buffer.from([RESIZE]), Buffer.from(JSON.stringify({ Width: tty.cols, Height: tty.rows }))]));
  const framer = framed ? new StdinFramer() : undefined;
  // Traffic on a quiet connection, so that no idle timeout on the way cuts a silent command.
  keepAlive = setInterval(() => ws.ping(), cluster.execKeepAliveMs);
  keepAlive.unref();
  // One frame buffer per connection, reused: the socket has taken each frame when send calls back,
  // and only then is the next part copied in. A new buffer per frame was 200 MiB of garbage per
  // 200 MiB upload.
  let frame: Buffer | undefined;
  let stdinClosed = false;
  const stdin = request.stdin
    ? new Writable({
        write(raw: Buffer, _encoding, done) {
          if (!ws.open) return done(new Error('the exec connection closed while stdin was being written'));
          const chunk = framer ? Buffer.from(framer.push(raw), 'latin1') : raw;
          let offset = 0;
          const next = (error?: Error) => {
            if (error) return done(error);
            if (offset >= chunk.length) return done();
            const length = Math.min(MAX_FRAME, chunk.length - offset);
            frame ??= Buffer.allocUnsafe(MAX_FRAME + 1);
            frame[0] = STDIN;
            chunk.copy(frame, 1, offset, offset + length);
            offset += length;
            ws.send(frame.subarray(0, length + 1), next);
          };
          next();
        },
        final(done) {
          if (tty) done();
          else if (framer && ws.open) ws.send(Buffer.concat([Buffer.from([STDIN]), Buffer.from(framer.end(), 'latin1')]), () => done());
          else if (v5 && ws.open) {
            stdinClosed = true;
            ws.send(Buffer.from([CLOSE, STDIN]), () => done());
          } else done();
        },
        destroy(error, done) {
          // Destroyed before its end (an abort): say stdin is over; after final() it already is.
          if (v5 && !tty && !stdinClosed && ws.open) ws.send(Buffer.from([CLOSE, STDIN]));
          done(error);
        },
      })
    : undefined;
  return {
    ...(stdin ? { stdin } : {}),
    stdout,
    stderr,
    exit,
    abandon: () => ws.terminate(),
  };
}
