import { randomBytes } from 'node:crypto';
import { posix } from 'node:path';
import { addAbortSignal, type Readable } from 'node:stream';
import { cancelledFrom, linkSignals, throwIfAborted } from '../abort.js';
import { extractDirectory, extractSingleFile, UnexpectedEntryError, UnsafeEntryError } from '../archive/extract.js';
import { packDirectory, packFile, type PackedTree } from '../archive/pack.js';
import type { DownloadDirOptions, TransferOptions, TransferStats } from '../contract.js';
import {
  BerthError,
  ConfigError,
  SandboxLostError,
  TaskFailure,
  TransferError,
  type CancelledError,
  type FailureCategory,
  type Operation,
  type TransferReason,
} from '../errors.js';
import { isLocalIo, localFailureMessage } from './local-failure.js';
import { downloadOverExec, RemoteTarFailure, uploadOverExec } from './tar-over-exec.js';
import type { SandboxTransport } from './transport.js';

/** 'native': the transport's archive API when it has one; 'exec': tar streamed over exec always. */
export type TransferMode = 'native' | 'exec';

/** What transfers need of their environment. */
export interface TransferHost {
  ctx(operation: Operation): { operation: Operation; backend: string; environmentId: string };
  /** Throws when the environment cannot be used (not started, torn down, lost). */
  ensureUsable(operation: Operation): void;
  /** The loss (or lifetime expiry) if the sandbox is no longer running. */
  checkAlive(operation: Operation): Promise<SandboxLostError | TaskFailure | undefined>;
  closed(): boolean;
  interrupted(operation: Operation, cause?: unknown): CancelledError;
}

type Direction = 'upload' | 'download';
/** Builds the TransferError of one transfer, with its paths and what it was doing. */
type Fail = (reason: TransferReason, message: string, cause: unknown, category?: FailureCategory) => TransferError;
interface Paths {
  localPath: string;
  remotePath: string;
}

/**
 * Uploads and downloads for one environment: tar archives streamed through the transport's
 * archive API or over exec, liveness checked around them, every failure classified with the
 * transfer it belongs to (an upload into a dead sandbox is a TransferError caused by a
 * SandboxLostError, never a vaguer "failed to add tests directory").
 */
export class Transfers {
  readonly #transport: SandboxTransport;
  readonly #mode: TransferMode;
  readonly #host: TransferHost;

  constructor(transport: SandboxTransport, mode: TransferMode, host: TransferHost) {
    this.#transport = transport;
    this.#mode = mode;
    this.#host = host;
  }

  async uploadFile(localPath: string, remotePath: string, opts: TransferOptions): Promise<void> {
    const marker = this.#marker(posix.dirname(remotePath));
    await this.#run('upload', { localPath, remotePath }, opts, (signal) => this.#upload(packFile(localPath, remotePath, marker), marker.trailer, signal));
  }

  uploadDir(localDir: string, remoteDir: string, opts: TransferOptions): Promise<TransferStats> {
    const marker = this.#marker(remoteDir);
    return this.#run('upload', { localPath: localDir, remotePath: remoteDir }, opts, (signal) =>
      this.#upload(packDirectory(localDir, remoteDir, marker), marker.trailer, signal),
    );
  }

  /** Over exec, the archive ends with a marker file beside what it carries (see uploadOverExec). */
  #marker(remoteDir: string): { trailer?: string } {
    return this.#archive ? {} : { trailer: posix.join(remoteDir, `.berth-upload-${randomBytes(6).toString('hex')}`) };
  }

  async downloadFile(remotePath: string, localPath: string, opts: TransferOptions): Promise<void> {
    const paths = { localPath, remotePath: remotePath.length > 1 ? remotePath.replace(/\/+$/, '') : remotePath };
    await this.#run('download', paths, opts, (signal) => this.#download(paths, (tar) => extractSingleFile(tar, localPath, remotePath), signal));
  }

  downloadDir(remoteDir: string, localDir: string, opts: DownloadDirOptions): Promise<TransferStats> {
    const normalised = remoteDir.length > 1 ? remoteDir.replace(/\/+$/, '') : remoteDir;
    const paths = { localPath: localDir, remotePath: normalised };
    const links = opts.outsideLinks ?? 'skip';
    if (!['skip', 'keep', 'refuse'].includes(links)) {
      throw new ConfigError({
        ...this.#host.ctx('download'),
        path: 'opts.outsideLinks',
        message: `outsideLinks is 'skip', 'keep' or 'refuse'; got ${String(links)}`,
      });
    }
    return this.#run('download', { localPath: localDir, remotePath: remoteDir }, opts, (signal) =>
      this.#download(paths, (tar) => extractDirectory(tar, localDir, links), signal),
    );
  }

  get #archive() {
    return this.#mode === 'native' ? this.#transport.archive : undefined;
  }

  async #upload(packed: PackedTree, marker: string | undefined, signal: AbortSignal): Promise<TransferStats> {
    packed.done.catch(() => undefined);
    const tar = addAbortSignal(signal, packed.stream);
    // Its failures are told through packed.done and the backend's call: never an unhandled event.
    tar.on('error', () => undefined);
    // Whichever fails first wins: a local read error or the sandbox refusing the archive.
    if (this.#archive) return (await Promise.all([this.#archive.put(tar, signal), packed.done]))[1];
    return (await Promise.all([packed.done, uploadOverExec(this.#transport, tar, marker!)]))[0];
  }

  async #download<T>(paths: Paths, extract: (tar: Readable) => Promise<T>, signal: AbortSignal): Promise<T> {
    if (this.#archive) {
      const tar = await this.#archive.get(paths.remotePath, signal);
      if (!tar) throw new RemoteTarFailure('not_found', 'does not exist in the sandbox');
      // The extraction may fail before it reads a byte (a target it cannot create): the release
      // signal then closes the backend's response.
      return extract(addAbortSignal(signal, tar));
    }
    const remote = await downloadOverExec(this.#transport, paths.remotePath);
    const extracting = extract(addAbortSignal(signal, remote.stream));
    // The reader gave up (an unsafe entry, a local error, an abort): stop tar in the sandbox. Not
    // when the archive had already ended (a missing path sends none): tar is done, and dropping
    // the connection could lose the exit status that says "not found" (seen on the Modal
    // simulator under load: the status comes by a separate call, after the output).
    extracting.catch(() => {
      if (!remote.stream.readableEnded) remote.abandon();
    });
    const [extracted, tar] = await Promise.allSettled([extracting, remote.done]);
    if (extracted.status === 'fulfilled' && tar.status === 'fulfilled') return extracted.value;
    // A missing path leaves an empty archive: say what is missing.
    if (tar.status === 'rejected' && tar.reason instanceof RemoteTarFailure && tar.reason.kind === 'not_found') throw tar.reason;
    // What berth itself found in the archive (an unsafe entry, a directory where a file was asked
    // for) or could not write locally is the story, whatever the sandbox's tar made of being cut
    // off for it; else tar's failure explains an archive that came empty or cut short.
    if (extracted.status === 'rejected') {
      const reason: unknown = extracted.reason;
      const decided = UnsafeEntryError.isInstance(reason) || (UnexpectedEntryError.isInstance(reason) && reason.kind !== 'empty') || isLocalIo(reason);
      if (decided || tar.status === 'fulfilled') throw reason;
    }
    throw (tar as PromiseRejectedResult).reason;
  }

  async #run<T>(operation: Direction, paths: Paths, opts: TransferOptions, body: (release: AbortSignal) => Promise<T>): Promise<T> {
    const ctx = this.#host.ctx(operation);
    if (!paths.remotePath.startsWith('/')) {
      throw new ConfigError({ ...ctx, path: 'remotePath', message: `remote paths are absolute inside the sandbox; got "${paths.remotePath}"` });
    }
    throwIfAborted(opts.signal, ctx);
    const verb = operation === 'upload' ? `upload ${paths.localPath} -> ${paths.remotePath}` : `download ${paths.remotePath} -> ${paths.localPath}`;
    const fail: Fail = (reason, message, cause, category) =>
      new TransferError({ ...ctx, ...paths, reason, message: `${verb} ${message}`, cause, ...(category ? { category } : {}) });
    try {
      this.#host.ensureUsable(operation);
    } catch (error) {
      // Say what was being transferred, with the loss as the cause (never the other way round).
      if (SandboxLostError.isInstance(error) || TaskFailure.isInstance(error)) throw fail('sandbox_lost', 'failed: the sandbox is gone', error);
      throw error;
    }
    // A stopped sandbox's filesystem may still accept an archive: check liveness around the copy.
    const before = await this.#host.checkAlive(operation);
    if (before) throw fail('sandbox_lost', 'failed: the sandbox is gone', before);
    // Fires on the caller's abort, and when the transfer fails: every stream and request the
    // transfer opened is then closed, so a failed transfer never holds the process open.
    const release = linkSignals(opts.signal);
    let result: T;
    try {
      result = await body(release.signal);
    } catch (error) {
      release.abort(error);
      if (opts.signal?.aborted) throw cancelledFrom(opts.signal, ctx);
      if (this.#host.closed()) throw this.#host.interrupted(operation, error);
      // The backend's answer decides: gone (lost), alive (classify the error), or unreachable itself.
      const seen = await this.#host.checkAlive(operation).catch((failure: unknown) => failure);
      if (SandboxLostError.isInstance(seen) || TaskFailure.isInstance(seen)) throw fail('sandbox_lost', 'failed: the sandbox is gone', seen);
      if (BerthError.isInstance(seen)) throw fail('interrupted', `failed: ${seen.message}`, seen);
      throw await this.#classify(error, operation, { verb, remotePath: paths.remotePath }, fail);
    } finally {
      release.dispose();
    }
    if (this.#host.closed()) throw this.#host.interrupted(operation);
    const after = await this.#host.checkAlive(operation);
    if (after) throw fail('sandbox_lost', 'failed: the sandbox died during the transfer', after);
    return result;
  }

  /** A transfer that failed while the sandbox lives: whose fault, and can a retry help? */
  async #classify(error: unknown, operation: Direction, { verb, remotePath }: { verb: string; remotePath: string }, fail: Fail): Promise<BerthError> {
    if (TransferError.isInstance(error) || ConfigError.isInstance(error)) return error;
    if (error instanceof RemoteTarFailure) {
      switch (error.kind) {
        case 'no_tar':
          return new ConfigError({ ...this.#host.ctx(operation), path: 'spec.image', message: error.message, cause: error });
        case 'not_found':
          // The sandbox worked; the file is not there: the task's business.
          return fail('not_found', `failed: the path ${error.message}`, error, 'task_failure');
        case 'tar_failed':
          return fail('remote_io', `failed: ${error.message}`, error);
        default:
          return fail('interrupted', `failed: ${error.message}`, error, 'transient_infra');
      }
    }
    // What the sandbox holds is the task's business: a link out of it is not misconfiguration.
    if (UnsafeEntryError.isInstance(error)) return fail('unsafe_entry', `refused: ${error.message}`, error, 'task_failure');
    if (UnexpectedEntryError.isInstance(error)) {
      // downloadFile on a directory, downloadDir on a file, a symlink: the caller asked for the
      // wrong thing, which is no score of the task.
      if (error.kind === 'directory' || error.kind === 'not_directory' || error.kind === 'symlink') {
        const what =
          error.kind === 'symlink'
            ? error.message
            : `${remotePath} ${error.kind === 'directory' ? 'is a directory: use downloadDir' : 'is not a directory: use downloadFile'}`;
        return new ConfigError({ ...this.#host.ctx(operation), path: 'remotePath', message: `${verb} refused: ${what}`, cause: error });
      }
      return fail('not_found', `failed: ${error.message}`, error, 'task_failure');
    }
    if (isLocalIo(error)) return fail('local_io', `failed on the local side: ${await localFailureMessage(error, operation)}`, error);
    const mapped = BerthError.isInstance(error) ? error : this.#transport.mapError(error, operation);
    if (mapped) return fail('interrupted', `failed: ${mapped.message}`, mapped);
    return fail('remote_io', `failed: ${error instanceof Error ? error.message : String(error)}`, error);
  }
}
