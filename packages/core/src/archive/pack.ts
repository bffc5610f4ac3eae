import { createReadStream, lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { lstat, readFile } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { Readable } from 'node:stream';
import { pack as tarPack, type Pack } from 'tar-stream';
import type { TransferStats } from '../contract.js';
import { SMALL_FILE } from './paths.js';
import { TimeSlice } from './time-slice.js';

export interface PackedTree {
  /** The tar byte stream: pipe it to the backend. Backpressure-driven; nothing is buffered whole. */
  stream: Readable;
  /** Settles when every entry has been written (or rejects on a local read error). */
  done: Promise<TransferStats>;
}

/** Tar entry name for a path inside the sandbox: relative to '/', POSIX separators. */
export function archiveName(remotePath: string): string {
  const normalised = posix.normalize(remotePath).replace(/^\/+/, '').replace(/\/+$/, '');
  return normalised === '.' ? '' : normalised;
}

function writeEntry(pack: Pack, header: Parameters<Pack['entry']>[0], body?: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    if (body) pack.entry(header, body, (err) => (err ? reject(err) : resolve()));
    else pack.entry(header, (err) => (err ? reject(err) : resolve()));
  });
}

function streamEntry(pack: Pack, header: Parameters<Pack['entry']>[0], path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const sink = pack.entry(header, (err) => (err ? reject(err) : resolve()));
    // When the tar is destroyed mid-entry (an abort), the entry errors: reject, don't crash.
    sink.on('error', (err: Error) => {
      source.destroy();
      reject(err);
    });
    const source = createReadStream(path, { highWaterMark: 1024 * 1024 });
    source.on('error', (err) => {
      sink.destroy(err);
      reject(err);
    });
    source.pipe(sink as unknown as NodeJS.WritableStream);
  });
}

export interface PackOptions {
  /**
   * An empty file written as the archive's last entry, at this path in the sandbox. Tar extracts
   * in order, so finding it there proves every entry before it arrived.
   */
  trailer?: string;
}

async function writeTrailer(pack: Pack, trailer: string | undefined): Promise<void> {
  if (trailer) await writeEntry(pack, { name: archiveName(trailer), type: 'file', size: 0, mode: 0o600, mtime: new Date(), ...OWNER }, Buffer.alloc(0));
}

/** The size of the chunks handed on: a tar of small files is made of 512-byte pieces. */
const CHUNK = 256 * 1024;

/**
 * tar-stream's pack is a streamx stream of headers and bodies, mostly under 1 KiB each: hand
 * backends a Node stream of ~256 KiB chunks instead. Each chunk may become a write, an HTTP chunk
 * or a frame on the way to the sandbox, and 20,000 tiny ones cost the engine more than the data.
 */
function nodeStream(pack: Pack): Readable {
  // Taken now, not when reading starts: the iterator is what listens for the pack's errors (a
  // missing file fails it before anyone reads).
  const chunks = pack[Symbol.asyncIterator]();
  async function* coalesced(): AsyncGenerator<Buffer> {
    let parts: Buffer[] = [];
    let size = 0;
    for await (const chunk of { [Symbol.asyncIterator]: () => chunks }) {
      const buf = chunk as Buffer;
      if (size === 0 && buf.length >= CHUNK) {
        yield buf;
        continue;
      }
      parts.push(buf);
      size += buf.length;
      if (size >= CHUNK) {
        yield Buffer.concat(parts, size);
        parts = [];
        size = 0;
      }
    }
    if (size > 0) yield Buffer.concat(parts, size);
  }
  return Readable.from(coalesced(), { objectMode: false });
}

const OWNER = { uid: 0, gid: 0, uname: 'root', gname: 'root' };

/**
 * Stream a local file as a one-entry tar whose entry lands at `remotePath` when extracted at '/'.
 */
export function packFile(localPath: string, remotePath: string, options: PackOptions = {}): PackedTree {
  const stream = tarPack();
  const packed = nodeStream(stream);
  const started = Date.now();
  const done = (async (): Promise<TransferStats> => {
    try {
      const st = await lstat(localPath);
      const header = { name: archiveName(remotePath), mode: st.mode & 0o7777, mtime: st.mtime, size: st.size, type: 'file' as const, ...OWNER };
      if (st.size < SMALL_FILE) await writeEntry(stream, header, await readFile(localPath));
      else await streamEntry(stream, header, localPath);
      await writeTrailer(stream, options.trailer);
      stream.finalize();
      return { files: 1, directories: 0, symlinks: 0, bytes: st.size, durationMs: Date.now() - started };
    } catch (error) {
      stream.destroy(error as Error);
      throw error;
    }
  })();
  return { stream: packed, done };
}

/**
 * Stream a local directory tree as a tar whose entries land under `remoteDir` when extracted at
 * '/'. Keeps modes (exec bits), symlinks (as links) and empty directories; sockets and FIFOs are
 * skipped. Parents of remoteDir are not emitted, so existing ones keep their modes.
 */
export function packDirectory(localDir: string, remoteDir: string, options: PackOptions = {}): PackedTree {
  const stream = tarPack();
  const packed = nodeStream(stream);
  const started = Date.now();
  const prefix = archiveName(remoteDir);
  const stats: TransferStats = { files: 0, directories: 0, symlinks: 0, bytes: 0, durationMs: 0 };
  const nameOf = (rel: string) => (prefix ? (rel ? `${prefix}/${rel}` : prefix) : rel);

  const slice = new TimeSlice();

  async function walk(dir: string, rel: string): Promise<number> {
    const dirents = readdirSync(dir, { withFileTypes: true });
    for (const dirent of dirents) {
      await slice.pause();
      const childRel = rel ? `${rel}/${dirent.name}` : dirent.name;
      const childPath = join(dir, dirent.name);
      const st = lstatSync(childPath);
      const base = { name: nameOf(childRel), mode: st.mode & 0o7777, mtime: st.mtime, ...OWNER };
      if (st.isSymbolicLink()) {
        await writeEntry(stream, { ...base, type: 'symlink', linkname: readlinkSync(childPath) });
        stats.symlinks++;
      } else if (st.isDirectory()) {
        await writeEntry(stream, { ...base, type: 'directory' });
        stats.directories++;
        await walk(childPath, childRel);
      } else if (st.isFile()) {
        const header = { ...base, type: 'file' as const, size: st.size };
        if (st.size < SMALL_FILE) await writeEntry(stream, header, readFileSync(childPath));
        else await streamEntry(stream, header, childPath);
        stats.files++;
        stats.bytes += st.size;
      }
    }
    return dirents.length;
  }

  const done = (async (): Promise<TransferStats> => {
    try {
      const st = await lstat(localDir);
      if (!st.isDirectory()) throw Object.assign(new Error(`${localDir} is not a directory`), { code: 'ENOTDIR' });
      const entries = await walk(localDir, '');
      // An empty source still makes its directory: emit it explicitly. A non-empty one gets its
      // directory from its entries, so an existing target (say /tmp) keeps its own mode.
      if (entries === 0 && prefix) {
        await writeEntry(stream, { name: prefix, mode: st.mode & 0o7777, mtime: st.mtime, type: 'directory', ...OWNER });
      }
      await writeTrailer(stream, options.trailer);
      stream.finalize();
      stats.durationMs = Date.now() - started;
      return stats;
    } catch (error) {
      stream.destroy(error as Error);
      throw error;
    }
  })();
  return { stream: packed, done };
}
