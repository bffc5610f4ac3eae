import { Transform, type Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { SandboxTransport } from './transport.js';

/**
 * Transfers for backends without a native archive API: a tar streamed through one process in the
 * sandbox, each way. Nothing is held whole in memory, tar's exit status and stderr are checked,
 * and an upload must be received byte for byte (a cut-short upload never resolves as success).
 */

const NO_TAR = 101;
const NOT_FOUND = 102;
const NO_FIFO = 103;

const NEEDS_TAR = `command -v tar >/dev/null 2>&1 || { echo "berth: the image has no tar" >&2; exit ${NO_TAR}; }`;

/**
 * Extract stdin at '/', counting the bytes that arrive: tee feeds tar through a FIFO and wc
 * counts what passed. Prints `berth-received <bytes>`, exits with tar's status.
 */
const UPLOAD_SCRIPT = [
  NEEDS_TAR,
  'd=$(mktemp -d 2>/dev/null) || d=/tmp/berth-upload-$$; mkdir -p "$d" && mkfifo "$d/tar" ||',
  `  { echo "berth: cannot make a FIFO in $d" >&2; exit ${NO_FIFO}; }`,
  'tar -xf "$d/tar" -C / & t=$!',
  'n=$(tee "$d/tar" | wc -c)',
  'wait $t; rc=$?',
  'rm -rf "$d"',
  'echo "berth-received $n"',
  'exit $rc',
].join('\n');

/** Archive $1 with entries under its basename, as Docker's archive API does. */
const DOWNLOAD_SCRIPT = [
  NEEDS_TAR,
  'p=$1',
  `[ -e "$p" ] || [ -L "$p" ] || { echo "berth: $p does not exist" >&2; exit ${NOT_FOUND}; }`,
  'cd "$(dirname "$p")" || exit 1',
  'exec tar -cf - "./$(basename "$p")"',
].join('\n');

/** Why a transfer over exec failed, for the environment to classify with its context. */
export class RemoteTarFailure extends Error {
  readonly kind: 'no_tar' | 'not_found' | 'tar_failed' | 'short' | 'exit_unknown';
  constructor(kind: RemoteTarFailure['kind'], message: string) {
    super(message);
    this.name = 'RemoteTarFailure';
    this.kind = kind;
  }
}

const lastLines = (text: string) => text.trim().split('\n').slice(-5).join('; ').slice(-1000);

function failureFor(code: number | null, stderr: string): RemoteTarFailure {
  if (code === null) return new RemoteTarFailure('exit_unknown', 'the backend never said how tar ended in the sandbox');
  if (code === NO_TAR) {
    return new RemoteTarFailure('no_tar', 'the image has no tar, which transfers over exec need: add tar to the image, or use a backend with native transfers');
  }
  if (code === NOT_FOUND) return new RemoteTarFailure('not_found', 'does not exist in the sandbox');
  return new RemoteTarFailure('tar_failed', `tar in the sandbox exited ${code}${stderr.trim() ? `: ${lastLines(stderr)}` : ''}`);
}

function text(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  stream.on('data', (c: Buffer) => chunks.length < 256 && chunks.push(c));
  return finished(stream).then(() => Buffer.concat(chunks).toString('utf8'));
}

/** Stream a tar (entries relative to '/') into the sandbox; resolves with the bytes received. */
export async function uploadOverExec(transport: SandboxTransport, tar: Readable): Promise<number> {
  const proc = await transport.spawn({ argv: ['/bin/sh', '-c', UPLOAD_SCRIPT, 'berth-upload'], env: {}, stdin: true, asRoot: true });
  const stdin = proc.stdin!;
  let sent = 0;
  let localError: unknown;
  const counter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      sent += chunk.length;
      done(null, chunk);
    },
  });
  // A local failure (a file vanished, an abort) closes the sandbox's stdin, so its tar ends too;
  // the local error is what the caller hears. The sandbox may also stop reading early (its tar
  // failed): then its exit status says why, not the broken pipe.
  tar.once('error', (error) => {
    localError ??= error;
    stdin.end();
  });
  stdin.on('error', () => undefined);
  tar.pipe(counter).pipe(stdin);
  try {
    const [stdout, stderr, exit] = await Promise.all([text(proc.stdout), text(proc.stderr), proc.exit]);
    if (localError) throw localError;
    const received = Number(/berth-received\s+(\d+)/.exec(stdout)?.[1] ?? -1);
    // Fewer bytes arrived than were sent: the connection lost them, whatever tar made of the rest.
    if (received >= 0 && received !== sent) {
      throw new RemoteTarFailure('short', `the sandbox received ${received} of ${sent} bytes`);
    }
    // A runtime that could not start the process at all may say why on stdout.
    if (exit.code !== 0) throw failureFor(exit.code, stderr.trim() ? stderr : stdout);
    if (received !== sent) {
      throw new RemoteTarFailure('short', `the sandbox received ${received < 0 ? 'an unknown number of' : received} of ${sent} bytes`);
    }
    return received;
  } catch (error) {
    proc.abandon();
    throw error;
  } finally {
    tar.destroy();
  }
}

export interface RemoteArchive {
  /** The tar stream: read it to the end. */
  stream: Readable;
  /** Settles when tar in the sandbox has ended: rejects with a RemoteTarFailure if it failed. */
  done: Promise<void>;
  /** Stop the transfer (the reader gave up). */
  abandon(): void;
}

/** A tar of `remotePath` (entries under its basename) streamed out of the sandbox. */
export async function downloadOverExec(transport: SandboxTransport, remotePath: string): Promise<RemoteArchive> {
  const proc = await transport.spawn({ argv: ['/bin/sh', '-c', DOWNLOAD_SCRIPT, 'berth-download', remotePath], env: {}, stdin: false, asRoot: true });
  const done = (async () => {
    const [stderr, exit] = await Promise.all([text(proc.stderr), proc.exit]);
    // GNU tar exits 1 when a file changed while it was read: the archive is still whole.
    if (exit.code === 1 && /file changed as we read it/.test(stderr)) return;
    if (exit.code !== 0) throw failureFor(exit.code, stderr);
  })();
  done.catch(() => undefined);
  return { stream: proc.stdout, done, abandon: () => proc.abandon() };
}
