import { Transform, type Readable, type Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { SandboxProcess, SandboxTransport } from './transport.js';

/**
 * Transfers for backends without a native archive API: a tar streamed through one process in the
 * sandbox, each way. Nothing is held whole in memory, tar's exit status and stderr are checked,
 * and an upload must be received byte for byte (a cut-short upload never resolves as success).
 * The image needs sh, tar, tee and wc, and /proc.
 */

const NO_TOOL = 101;
const NOT_FOUND = 102;

const needs = (...tools: string[]) =>
  `for t in ${tools.join(' ')}; do command -v $t >/dev/null 2>&1 || { echo "berth: the image has no $t" >&2; exit ${NO_TOOL}; }; done`;

/**
 * Extract stdin at '/', counting what arrives: tee hands the bytes to tar and copies them to wc
 * through fd 5. The statuses of tee and tar and the count go to stdout (fd 4), tar's complaints
 * to stderr. No temporary files and no FIFO: if tar stops reading, tee dies of SIGPIPE, the
 * script ends, and the connection with it.
 */
const UPLOAD_SCRIPT = [
  needs('tar', 'tee', 'wc'),
  'exec 4>&1',
  'n=$( { { tee /proc/self/fd/5; echo "berth-tee $?" >&4; } | { tar -xf - -C / >&2; echo "berth-tar $?" >&4; } 5>&-; } 5>&1 | wc -c)',
  'echo "berth-received $n"',
].join('\n');

/** Archive $1 with entries under its basename, as Docker's archive API does. */
const DOWNLOAD_SCRIPT = [
  needs('tar'),
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
  if (code === NO_TOOL) {
    const tool = /the image has no (\S+)/.exec(stderr)?.[1] ?? 'tar';
    return new RemoteTarFailure('no_tar', `the image has no ${tool}, which transfers over exec need: add it to the image, or use a backend with native transfers`);
  }
  if (code === NOT_FOUND) return new RemoteTarFailure('not_found', 'does not exist in the sandbox');
  return new RemoteTarFailure('tar_failed', `tar in the sandbox exited ${code}${stderr.trim() ? `: ${lastLines(stderr)}` : ''}`);
}

function text(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  stream.on('data', (c: Buffer) => chunks.length < 256 && chunks.push(c));
  return finished(stream).then(() => Buffer.concat(chunks).toString('utf8'));
}

/** What the upload script printed: bytes tee passed on, and the statuses of tee and tar. */
function uploadReport(stdout: string): { received?: number; tee?: number; tar?: number } {
  const number = (re: RegExp) => {
    const m = re.exec(stdout);
    return m ? Number(m[1]) : undefined;
  };
  const out: { received?: number; tee?: number; tar?: number } = {};
  const received = number(/^berth-received\s+(\d+)/m);
  const tee = number(/^berth-tee (\d+)/m);
  const tar = number(/^berth-tar (\d+)/m);
  if (received !== undefined) out.received = received;
  if (tee !== undefined) out.tee = tee;
  if (tar !== undefined) out.tar = tar;
  return out;
}

/** Stream a tar (entries relative to '/') into the sandbox; resolves with the bytes received. */
export async function uploadOverExec(transport: SandboxTransport, tar: Readable): Promise<number> {
  let sent = 0;
  let localError: unknown;
  let stdin: Writable | undefined;
  // A local failure (a file vanished, an abort) may come at any time, even before the process
  // exists; it closes the sandbox's stdin so its tar ends too, and is what the caller hears.
  tar.once('error', (error) => {
    localError ??= error;
    stdin?.end();
  });
  let proc: SandboxProcess;
  try {
    proc = await transport.spawn({ argv: ['/bin/sh', '-c', UPLOAD_SCRIPT, 'berth-upload'], env: {}, stdin: true, asRoot: true });
  } catch (error) {
    tar.destroy();
    throw error;
  }
  stdin = proc.stdin!;
  const counter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      sent += chunk.length;
      done(null, chunk);
    },
  });
  // The sandbox may stop reading early (its tar failed): its statuses say why, not the broken pipe.
  stdin.on('error', () => undefined);
  if (localError) stdin.end();
  else tar.pipe(counter).pipe(stdin);
  try {
    const [stdout, stderr, exit] = await Promise.all([text(proc.stdout), text(proc.stderr), proc.exit]);
    if (localError) throw localError;
    const report = uploadReport(stdout);
    if (exit.code === NO_TOOL || report.tar === undefined) {
      // The script never got to tar: the runtime could not start it, or a tool is missing. A
      // runtime that could not start the process at all may say why on stdout.
      throw failureFor(exit.code === 0 ? 1 : exit.code, stderr.trim() ? stderr : stdout);
    }
    // tar failed while reading everything there was: the archive came short (the connection lost
    // the rest; busybox tar even calls a cut at an entry boundary a clean end). When tar stopped
    // reading first, tee died of SIGPIPE: then tar's own failure is the story.
    const readAll = report.tee === 0;
    if (readAll && report.received !== sent) {
      throw new RemoteTarFailure('short', `the sandbox received ${report.received ?? 'an unknown number of'} of ${sent} bytes`);
    }
    if (report.tar !== 0) throw failureFor(report.tar, stderr);
    // tar succeeded yet tee did not finish: tar read the archive's end marker and left what followed.
    return report.received ?? sent;
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
