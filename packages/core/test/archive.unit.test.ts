import { createHash, randomBytes } from 'node:crypto';
import { lstat, mkdir, mkdtemp, readFile, readlink, readdir, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { pack as tarPack } from 'tar-stream';
import { afterAll, describe, expect, it } from 'vitest';
import { UnsafeEntryError, extractDirectory, extractSingleFile } from '../src/archive/extract.js';
import { packDirectory, packFile } from '../src/archive/pack.js';

const made: string[] = [];
async function tmp(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'berth-archive-'));
  made.push(dir);
  return dir;
}
afterAll(async () => {
  const { rm } = await import('node:fs/promises');
  await Promise.all(made.map((d) => rm(d, { recursive: true, force: true })));
});

/** A tar as Docker's archive API returns it: entries under the source's basename. */
function tarOf(
  entries: Array<{ name: string; type?: 'file' | 'directory' | 'symlink' | 'link'; body?: string; linkname?: string; mode?: number }>,
): NodeJS.ReadableStream {
  const p = tarPack();
  const out = new PassThrough();
  (p as unknown as NodeJS.ReadableStream).pipe(out);
  void (async () => {
    for (const e of entries) {
      await new Promise<void>((resolve, reject) => {
        const header = { name: e.name, type: e.type ?? 'file', mode: e.mode ?? 0o644, ...(e.linkname ? { linkname: e.linkname } : {}) };
        if (e.body !== undefined) p.entry(header, e.body, (err) => (err ? reject(err) : resolve()));
        else p.entry(header, (err) => (err ? reject(err) : resolve()));
      });
    }
    p.finalize();
  })();
  return out;
}

async function listTree(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const entry of (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
    const rel = prefix + entry.name;
    const full = join(dir, entry.name);
    if (entry.isSymbolicLink()) out.push(`${rel} -> ${await readlink(full)}`);
    else if (entry.isDirectory()) out.push(`${rel}/`, ...(await listTree(full, `${rel}/`)));
    else
      out.push(
        `${rel} ${(await stat(full)).mode & 0o777} ${createHash('sha256')
          .update(await readFile(full))
          .digest('hex')
          .slice(0, 12)}`,
      );
  }
  return out;
}

describe('tar streaming', () => {
  it('packs a tree and extracts it identically (modes, symlinks, empty dirs, unicode)', async () => {
    const src = await tmp();
    await mkdir(join(src, 'sub dir/deeper'), { recursive: true });
    await mkdir(join(src, 'empty/also-empty'), { recursive: true });
    await writeFile(join(src, 'run.sh'), '#!/bin/sh\necho hi\n', { mode: 0o755 });
    await writeFile(join(src, 'sub dir/データ ü.txt'), 'unicode');
    await writeFile(join(src, 'sub dir/deeper/big.bin'), randomBytes(600 * 1024));
    await symlink('../run.sh', join(src, 'sub dir/link'));
    // The packer names entries for the remote path; Docker would return them under the basename.
    const packed = packDirectory(src, '/remote/tree');
    const names: string[] = [];
    const relay = new PassThrough();
    const { extract } = await import('tar-stream');
    const rename = extract();
    const repack = tarPack();
    rename.on('entry', (header, stream, next) => {
      names.push(header.name);
      header.name = header.name.replace(/^remote\//, '');
      header.pax = null; // the pax record would carry the old name
      stream.pipe(repack.entry(header, next) as unknown as NodeJS.WritableStream);
    });
    rename.on('finish', () => repack.finalize());
    (packed.stream as unknown as NodeJS.ReadableStream).pipe(rename as unknown as NodeJS.WritableStream);
    (repack as unknown as NodeJS.ReadableStream).pipe(relay);
    const dest = join(await tmp(), 'out');
    const [stats, packStats] = await Promise.all([extractDirectory(relay, dest), packed.done]);
    expect(names.every((n) => n.startsWith('remote/tree/'))).toBe(true);
    expect(packStats).toMatchObject({ files: 3, symlinks: 1, directories: 4 });
    expect(stats).toMatchObject({ files: 3, symlinks: 1, directories: 4, bytes: packStats.bytes });
    expect(await listTree(dest)).toEqual(await listTree(src));
  });

  it('packFile names the entry by the remote path', async () => {
    const dir = await tmp();
    await writeFile(join(dir, 'f'), 'content', { mode: 0o600 });
    const packed = packFile(join(dir, 'f'), '/a/b/c.txt');
    const { extract } = await import('tar-stream');
    const ex = extract();
    const seen: Array<[string, number | undefined]> = [];
    ex.on('entry', (h, s, next) => {
      seen.push([h.name, h.mode]);
      s.resume();
      s.on('end', next);
    });
    (packed.stream as unknown as NodeJS.ReadableStream).pipe(ex as unknown as NodeJS.WritableStream);
    await packed.done;
    await new Promise<void>((r) => ex.on('finish', () => r()));
    expect(seen).toEqual([['a/b/c.txt', 0o600]]);
  });

  it('a missing local directory fails the pack', async () => {
    const packed = packDirectory('/definitely/not/here', '/x');
    (packed.stream as unknown as NodeJS.ReadableStream).on('error', () => undefined);
    await expect(packed.done).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it.each([
    [
      'dotdot',
      [
        { name: 'top/', type: 'directory' as const },
        { name: 'top/../../escape.txt', body: 'x' },
      ],
      'escapes',
    ],
    ['absolute', [{ name: '/etc/evil', body: 'x' }], 'absolute'],
    [
      'absolute symlink',
      [
        { name: 'top/', type: 'directory' as const },
        { name: 'top/evil', type: 'symlink' as const, linkname: '/etc/passwd' },
      ],
      'outside',
    ],
    [
      'relative symlink out',
      [
        { name: 'top/', type: 'directory' as const },
        { name: 'top/up', type: 'symlink' as const, linkname: '../..' },
      ],
      'outside',
    ],
    [
      'hard link out',
      [
        { name: 'top/', type: 'directory' as const },
        { name: 'top/h', type: 'link' as const, linkname: '../etc/passwd' },
      ],
      '',
    ],
  ])('refuses %s entries', async (_label, entries, why) => {
    const parent = await tmp();
    const dest = join(parent, 'target');
    const err = await extractDirectory(tarOf(entries), dest, 'refuse').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnsafeEntryError);
    expect((err as Error).message).toContain(why);
    expect(await readdir(parent)).toEqual(['target']);
    await expect(lstat(join(parent, 'escape.txt'))).rejects.toThrow();
  });

  it.each([
    [
      'a chain of links to "."',
      [
        { name: 'top/', type: 'directory' as const },
        { name: 'top/x', type: 'symlink' as const, linkname: '.' },
        { name: 'top/x/y', type: 'symlink' as const, linkname: '.' },
        { name: 'top/x/y/reward.txt', type: 'symlink' as const, linkname: '../../SECRET' },
      ],
    ],
    [
      'a link whose path runs through another link',
      [
        { name: 'top/', type: 'directory' as const },
        { name: 'top/d/', type: 'directory' as const },
        { name: 'top/d/x', type: 'symlink' as const, linkname: '.' },
        { name: 'top/d/y', type: 'symlink' as const, linkname: 'x/x/x/../../..' },
      ],
    ],
    [
      'a loop',
      [
        { name: 'top/', type: 'directory' as const },
        { name: 'top/a', type: 'symlink' as const, linkname: 'b' },
        { name: 'top/b', type: 'symlink' as const, linkname: 'a' },
      ],
    ],
  ])('refuses %s, and leaves no link behind', async (_label, entries) => {
    const parent = await tmp();
    await writeFile(join(parent, 'SECRET'), 'host secret');
    const dest = join(parent, 'target');
    const err = await extractDirectory(tarOf(entries), dest, 'refuse').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnsafeEntryError);
    const left = await listTree(dest);
    expect(left.filter((l) => l.includes(' -> '))).toEqual([]);
  });

  it('by default skips links leading outside (directly or through other links) and counts them; keep makes them as they are', async () => {
    const entries = [
      { name: 'top/', type: 'directory' as const },
      { name: 'top/ok.txt', body: 'fine' },
      { name: 'top/mtab', type: 'symlink' as const, linkname: '/proc/self/mounts' },
      { name: 'top/up', type: 'symlink' as const, linkname: '../..' },
      { name: 'top/d/', type: 'directory' as const },
      { name: 'top/d/x', type: 'symlink' as const, linkname: '.' },
      { name: 'top/d/y', type: 'symlink' as const, linkname: 'x/x/x/../../..' },
      { name: 'top/good', type: 'symlink' as const, linkname: 'ok.txt' },
    ];
    const parent = await tmp();
    const skipped = await extractDirectory(tarOf(entries), join(parent, 'skip'));
    expect(skipped).toMatchObject({ files: 1, symlinks: 2, skippedSymlinks: 3 });
    expect((await listTree(join(parent, 'skip'))).filter((l) => l.includes(' -> ')).sort()).toEqual(['d/x -> .', 'good -> ok.txt']);
    const kept = await extractDirectory(tarOf(entries), join(parent, 'keep'), 'keep');
    expect(kept).toMatchObject({ files: 1, skippedSymlinks: 0 });
    expect(await readlink(join(parent, 'keep', 'mtab'))).toBe('/proc/self/mounts');
    expect(await readdir(parent)).toEqual(['keep', 'skip'].sort());
  });

  it('keeps harmless links, including one through another link, made after the files', async () => {
    const dest = join(await tmp(), 'out');
    await extractDirectory(
      tarOf([
        { name: 'top/', type: 'directory' },
        { name: 'top/real/', type: 'directory' },
        { name: 'top/real/f.txt', body: 'data' },
        { name: 'top/alias', type: 'symlink', linkname: 'real' },
        { name: 'top/via', type: 'symlink', linkname: 'alias/f.txt' },
      ]),
      dest,
    );
    expect(await readFile(join(dest, 'via'), 'utf8')).toBe('data');
  });

  it('never writes through a symlink that already sits in the target', async () => {
    const parent = await tmp();
    const outside = join(parent, 'outside');
    await mkdir(outside);
    const dest = join(parent, 'target');
    await mkdir(dest);
    await symlink(outside, join(dest, 'sneaky'));
    const err = await extractDirectory(
      tarOf([
        { name: 'top/', type: 'directory' },
        { name: 'top/sneaky/file', body: 'x' },
      ]),
      dest,
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnsafeEntryError);
    expect(await readdir(outside)).toEqual([]);
  });

  it('replaces an existing symlink at a file destination instead of following it', async () => {
    const parent = await tmp();
    await writeFile(join(parent, 'victim'), 'original');
    const dest = join(parent, 'target');
    await mkdir(dest);
    await symlink(join(parent, 'victim'), join(dest, 'f'));
    await extractDirectory(
      tarOf([
        { name: 'top/', type: 'directory' },
        { name: 'top/f', body: 'new' },
      ]),
      dest,
    );
    expect(await readFile(join(parent, 'victim'), 'utf8')).toBe('original');
    expect(await readFile(join(dest, 'f'), 'utf8')).toBe('new');
  });

  it('extractSingleFile refuses directories and symlinks clearly', async () => {
    const dir = await tmp();
    await expect(extractSingleFile(tarOf([{ name: 'd/', type: 'directory' }]), join(dir, 'x'), '/d')).rejects.toThrow('/d is a directory: use downloadDir');
    await expect(extractSingleFile(tarOf([{ name: 'l', type: 'symlink', linkname: 'target' }]), join(dir, 'x'), '/l')).rejects.toThrow('is a symlink');
    await extractSingleFile(tarOf([{ name: 'f', body: 'data', mode: 0o751 }]), join(dir, 'nested/x'), '/f');
    expect(await readFile(join(dir, 'nested/x'), 'utf8')).toBe('data');
    expect((await stat(join(dir, 'nested/x'))).mode & 0o777).toBe(0o751);
  });

  it('extractDirectory on a file archive says to use downloadFile', async () => {
    const dir = await tmp();
    await expect(extractDirectory(tarOf([{ name: 'f', body: 'x' }]), join(dir, 'o'))).rejects.toThrow('use downloadFile');
  });

  it('extractDirectory on a file archive leaves no directory it made (the file may go there next), and keeps one that was there', async () => {
    const dir = await tmp();
    await expect(extractDirectory(tarOf([{ name: 'f', body: 'x' }]), join(dir, 'new', 'deeper'))).rejects.toThrow('use downloadFile');
    expect(await readdir(dir)).toEqual([]);
    await mkdir(join(dir, 'there'));
    await expect(extractDirectory(tarOf([{ name: 'f', body: 'x' }]), join(dir, 'there'))).rejects.toThrow('use downloadFile');
    expect(await readdir(dir)).toEqual(['there']);
  });
});
