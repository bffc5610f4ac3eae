import { addAbortSignal, type Readable } from 'node:stream';
import { cancelledFrom, throwIfAborted } from '../abort.js';
import { extractDirectory, extractSingleFile, UnexpectedEntryError, UnsafeEntryError } from '../archive/extract.js';
import { packDirectory, packFile, type PackedTree } from '../archive/pack.js';
import type { TransferOptions, TransferStats } from '../contract.js';
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
interface Paths {
  localPath: string;
  remotePath: string;
}

const LOCAL_CODES = new Set(['ENOENT', 'ENOTDIR', 'EACCES', 'EISDIR', 'ENOSPC', 'EROFS', 'EEXIST', 'EPERM']);

/** A failure of the local filesystem (not a socket to the backend that happens to share the code). */
function isLocalIo(error: unknown): boolean {
  const e = error as { code?: unknown; syscall?: unknown; statusCode?: unknown } | undefined;
  return typeof e?.code === 'string' && LOCAL_CODES.has(e.code) && e.syscall !== 'connect' && e.statusCode === undefined;
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
    await this.#run('upload', { localPath, remotePath }, opts, (signal) => this.#upload(packFile(localPath, remotePath), signal));
  }

  uploadDir(localDir: string, remoteDir: string, opts: TransferOptions): Promise<TransferStats> {
    return this.#run('upload', { localPath: localDir, remotePath: remoteDir }, opts, (signal) => this.#upload(packDirectory(localDir, remoteDir), signal));
  }

  async downloadFile(remotePath: string, localPath: string, opts: TransferOptions): Promise<void> {
    const paths = { localPath, remotePath };
    await this.#run('download', paths, opts, (signal) => this.#download(paths, (tar) => extractSingleFile(tar, localPath, remotePath), signal));
  }

  downloadDir(remoteDir: string, localDir: string, opts: TransferOptions): Promise<TransferStats> {
    const normalised = remoteDir.length > 1 ? remoteDir.replace(/\/+$/, '') : remoteDir;
    const paths = { localPath: localDir, remotePath: normalised };
    return this.#run('download', { localPath: localDir, remotePath: remoteDir }, opts, (signal) =>
      this.#download(paths, (tar) => extractDirectory(tar, localDir), signal),
    );
  }

  get #archive() {
    return this.#mode === 'native' ? this.#transport.archive : undefined;
  }

  async #upload(packed: PackedTree, signal: AbortSignal | undefined): Promise<TransferStats> {
    packed.done.catch(() => undefined);
    const tar = signal ? addAbortSignal(signal, packed.stream) : packed.stream;
    // Whichever fails first wins: a local read error or the sandbox refusing the archive.
    if (this.#archive) return (await Promise.all([this.#archive.put(tar, signal), packed.done]))[1];
    return (await Promise.all([packed.done, uploadOverExec(this.#transport, tar)]))[0];
  }

  async #download<T>(paths: Paths, extract: (tar: Readable) => Promise<T>, signal: AbortSignal | undefined): Promise<T> {
    if (this.#archive) {
      const tar = await this.#archive.get(paths.remotePath, signal);
      if (!tar) throw new RemoteTarFailure('not_found', 'does not exist in the sandbox');
      return extract(signal ? addAbortSignal(signal, tar) : tar);
    }
    const remote = await downloadOverExec(this.#transport, paths.remotePath);
    const extracting = extract(signal ? addAbortSignal(signal, remote.stream) : remote.stream);
    // The reader gave up (an unsafe entry, a local error, an abort): stop tar in the sandbox.
    extracting.catch(() => remote.abandon());
    const [extracted, tar] = await Promise.allSettled([extracting, remote.done]);
    if (extracted.status === 'fulfilled' && tar.status === 'fulfilled') return extracted.value;
    // What berth itself refused (an unsafe entry) or could not write locally is the story; else
    // tar's failure in the sandbox explains an archive that came empty or cut short.
    if (extracted.status === 'rejected' && (UnsafeEntryError.isInstance(extracted.reason) || isLocalIo(extracted.reason))) throw extracted.reason;
    throw tar.status === 'rejected' ? tar.reason : (extracted as PromiseRejectedResult).reason;
  }

  async #run<T>(operation: Direction, paths: Paths, opts: TransferOptions, body: (signal: AbortSignal | undefined) => Promise<T>): Promise<T> {
    const ctx = this.#host.ctx(operation);
    if (!paths.remotePath.startsWith('/')) {
      throw new ConfigError({ ...ctx, path: 'remotePath', message: `remote paths are absolute inside the sandbox; got "${paths.remotePath}"` });
    }
    throwIfAborted(opts.signal, ctx);
    const verb = operation === 'upload' ? `upload ${paths.localPath} -> ${paths.remotePath}` : `download ${paths.remotePath} -> ${paths.localPath}`;
    const fail = (reason: TransferReason, message: string, cause: unknown, category?: FailureCategory) =>
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
    let result: T;
    try {
      result = await body(opts.signal);
    } catch (error) {
      if (opts.signal?.aborted) throw cancelledFrom(opts.signal, ctx);
      if (this.#host.closed()) throw this.#host.interrupted(operation, error);
      // The backend's answer decides: gone (lost), alive (classify the error), or unreachable itself.
      const seen = await this.#host.checkAlive(operation).catch((failure: unknown) => failure);
      if (SandboxLostError.isInstance(seen) || TaskFailure.isInstance(seen)) throw fail('sandbox_lost', 'failed: the sandbox is gone', seen);
      if (BerthError.isInstance(seen)) throw fail('interrupted', `failed: ${seen.message}`, seen);
      throw this.#classify(error, operation, fail);
    }
    if (this.#host.closed()) throw this.#host.interrupted(operation);
    const after = await this.#host.checkAlive(operation);
    if (after) throw fail('sandbox_lost', 'failed: the sandbox died during the transfer', after);
    return result;
  }

  /** A transfer that failed while the sandbox lives: whose fault, and can a retry help? */
  #classify(error: unknown, operation: Direction, fail: (r: TransferReason, m: string, c: unknown, cat?: FailureCategory) => TransferError): BerthError {
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
    if (UnexpectedEntryError.isInstance(error)) return fail('not_found', `failed: ${error.message}`, error, 'task_failure');
    if (isLocalIo(error)) return fail('local_io', `failed on the local side: ${(error as Error).message}`, error);
    const mapped = BerthError.isInstance(error) ? error : this.#transport.mapError(error, operation);
    if (mapped) return fail('interrupted', `failed: ${mapped.message}`, mapped);
    return fail('remote_io', `failed: ${error instanceof Error ? error.message : String(error)}`, error);
  }
}
