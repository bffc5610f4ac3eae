import { Transform, type Readable, type TransformCallback, type Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { SandboxProcess, SandboxTransport } from './transport.js';

/**
 * Transfers for backends without a native archive API: a tar streamed through one process in the
 * sandbox, each way. Nothing is held whole in memory, tar's exit status and stderr are checked,
 * and an upload must arrive whole (a cut-short upload never resolves as success). The image needs
 * sh and tar.
 */

const NO_TAR = 101;
const NOT_FOUND = 102;

const NEEDS_TAR = `command -v tar >/dev/null 2>&1 || { echo "berth: the image has no tar" >&2; exit ${NO_TAR}; }`;

/**
 * Extract stdin at '/'. The archive's last entry is an empty marker file ($1): tar extracts in
 * order, so the marker being there proves every entry before it arrived; an archive cut short
 * lacks it, whatever tar made of the rest. tar alone reads stdin: nothing slows the stream down.
 */
const UPLOAD_SCRIPT = [NEEDS_TAR, 'tar -xf - -C / >&2; rc=$?', 'if [ -f "$1" ]; then rm -f "$1"; echo berth-complete; fi', 'exit $rc'].join('\n');

/** Archive $1 with entries under its basename, as Docker's archive API does. */
const DOWNLOAD_SCRIPT = [
  NEEDS_TAR,
  'p=$1',
  `[ -e "$p" ] || [ -L "$p" ] || { echo "berth: $p does not exist" >&2; exit ${NOT_FOUND}; }`,
  // Parameter expansion, not dirname/basename: $(...) would drop trailing newlines of a name.
  'dir=${p%/*}; cd "${dir:-/}" || exit 1',
  'exec tar -cf - "./${p##*/}"',
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
    return new RemoteTarFailure('no_tar', 'the image has no tar, which transfers over exec need: add it to the image, or use a backend with native transfers');
  }
  if (code === NOT_FOUND) return new RemoteTarFailure('not_found', 'does not exist in the sandbox');
  // berth's script is plain sh, which the sandbox has: 126/127 mean the backend's runtime could
  // not start it at all, not that tar refused anything.
  if (code === 126 || code === 127) {
    return new RemoteTarFailure(
      'exit_unknown',
      `the backend could not start the transfer's process (exit ${code}${stderr.trim() ? `: ${lastLines(stderr)}` : ''})`,
    );
  }
  return new RemoteTarFailure('tar_failed', `tar in the sandbox exited ${code}${stderr.trim() ? `: ${lastLines(stderr)}` : ''}`);
}

function text(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  stream.on('data', (c: Buffer) => chunks.length < 256 && chunks.push(c));
  return finished(stream).then(() => Buffer.concat(chunks).toString('utf8'));
}

/** tar's words for an archive that ended early: the connection lost the rest. */
const TRUNCATED = /unexpected end|unexpected eof|short read|truncated|premature end/i;

/**
 * Stream a tar (entries relative to '/', ending with the empty file `marker`) into the sandbox.
 * Resolves once tar has extracted it all; a cut-short upload never resolves.
 */
export async function uploadOverExec(transport: SandboxTransport, tar: Readable, marker: string): Promise<void> {
  let localError: unknown;
  let stdin: Writable | undefined;
  // A local failure (a file vanished, an abort) may come at any time, even before the process
  // exists; it closes the sandbox's stdin so its tar ends too, and is what the caller hears.
  tar.once('error', (error) => {
    localError ??= error;
    stdin?.end();
  });
  // Destroyed without an error (its reader gave up, or it failed before anyone read it).
  const closedEarly = () => new Error('the archive stream was closed before its end');
  tar.once('close', () => {
    if (tar.readableEnded) return;
    localError ??= closedEarly();
    stdin?.end();
  });
  let proc: SandboxProcess;
  try {
    proc = await transport.spawn({ argv: ['/bin/sh', '-c', UPLOAD_SCRIPT, 'berth-upload', marker], env: {}, stdin: true, asRoot: true });
  } catch (error) {
    tar.destroy();
    throw error;
  }
  stdin = proc.stdin!;
  // The sandbox may stop reading early (its tar failed): its exit status says why, not the broken pipe.
  stdin.on('error', () => undefined);
  if (localError || tar.destroyed) {
    localError ??= closedEarly();
    stdin.end();
  } else tar.pipe(stdin);
  try {
    const [stdout, stderr, exit] = await Promise.all([text(proc.stdout), text(proc.stderr), proc.exit]);
    if (localError) throw localError;
    const complete = /^berth-complete$/m.test(stdout);
    if (exit.code === 0 && complete) return;
    if (exit.code === 0 || (exit.code !== null && exit.code !== NO_TAR && TRUNCATED.test(stderr))) {
      throw new RemoteTarFailure('short', `the archive reached the sandbox cut short${stderr.trim() ? ` (tar: ${lastLines(stderr)})` : ''}`);
    }
    // A runtime that could not start the process at all may say why on stdout.
    throw failureFor(exit.code, stderr.trim() ? stderr : stdout);
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
  const ending = new ArchiveEnding();
  const stream = proc.stdout.pipe(ending);
  proc.stdout.on('error', (error) => stream.destroy(error));
  const done = (async () => {
    const [stderr, exit] = await Promise.all([text(proc.stderr), proc.exit]);
    // GNU tar exits 1 when a file changed while it was read: the archive is still whole.
    if (!(exit.code === 1 && /file changed as we read it/.test(stderr)) && exit.code !== 0) throw failureFor(exit.code, stderr);
    // tar ended well, yet a transport may still have lost the archive's tail (a Kubernetes API
    // server that closes after the exit status without flushing stdout, seen on 1.34): an archive
    // that does not end with tar's end-of-archive blocks was cut short, whatever the exit said.
    const whole = await ending.whole;
    if (!whole)
      throw new RemoteTarFailure(
        'short',
        `the archive from the sandbox ended without tar's end-of-archive blocks after ${ending.bytes} bytes: it was cut short on the way`,
      );
  })();
  done.catch(() => undefined);
  return { stream, done, abandon: () => proc.abandon() };
}

/**
 * Passes an archive through, and tells at its end whether it ended as tar ends one: a whole number
 * of 512-byte blocks, the last two of them zeros.
 */
class ArchiveEnding extends Transform {
  bytes = 0;
  #tail: Buffer = Buffer.alloc(0);
  readonly whole: Promise<boolean>;
  #settle!: (whole: boolean) => void;

  constructor() {
    super();
    this.whole = new Promise((resolve) => (this.#settle = resolve));
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    this.#tail = chunk.length >= 1024 ? chunk.subarray(chunk.length - 1024) : Buffer.concat([this.#tail, chunk]).subarray(-1024);
    done(null, chunk);
  }

  override _flush(done: TransformCallback): void {
    this.#settle(this.bytes % 512 === 0 && this.#tail.length === 1024 && this.#tail.every((b) => b === 0));
    done();
  }

  override _destroy(error: Error | null, done: (error?: Error | null) => void): void {
    this.#settle(false);
    done(error);
  }
}
