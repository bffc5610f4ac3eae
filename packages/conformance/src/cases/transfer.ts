import { createHash, randomBytes } from 'node:crypto';
import { lstat, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve, dirname, sep } from 'node:path';
import { ConfigError, TransferError, serializeError, type Environment } from '@berth/core';
import { describe, expect } from 'vitest';
import { describeError, uniqueName, type Harness } from '../harness.js';
import { digestFile, exists, makeSymlink, snapshotTree, writeFileWithMode, writeRandomFile, type DigestAlgorithm } from '../local.js';
import { remoteDigest, remoteDigestAlgorithm, run } from '../remote.js';

const MiB = 1024 * 1024;

/** The tree the directory round trip sends: awkward names, empty dirs, links, exec bits. */
async function makeAwkwardTree(root: string): Promise<void> {
  await writeFileWithMode(join(root, 'plain.txt'), 'plain\n', 0o644);
  await writeFileWithMode(join(root, 'with space.txt'), 'spaces in the name\n', 0o644);
  await writeFileWithMode(join(root, 'ünïcødé', '日本語 файл.txt'), 'unicode ✓\n', 0o644);
  await writeFileWithMode(join(root, 'run.sh'), '#!/bin/sh\necho run-ok\n', 0o755);
  await writeFileWithMode(join(root, 'data.bin'), randomBytes(300 * 1024), 0o644);
  await writeFileWithMode(join(root, 'empty.txt'), '', 0o600);
  await writeFileWithMode(join(root, 'nested', 'deep', 'dir', 'file.txt'), 'deep\n', 0o644);
  await mkdir(join(root, 'empty', 'inner-empty'), { recursive: true });
  await makeSymlink('plain.txt', join(root, 'link-to-plain'));
  await makeSymlink('../plain.txt', join(root, 'nested', 'up-link'));
}

const TREE_FILES = 7;
const TREE_DIRS = 6; // ünïcødé, nested, nested/deep, nested/deep/dir, empty, empty/inner-empty
const TREE_SYMLINKS = 2;

export function transferCases(h: Harness): void {
  describe('transfers', () => {
    const shared = h.sharedEnv();
    const env = (): Environment => shared.env;
    let algorithm: DigestAlgorithm | undefined;
    const digestAlgorithm = async (): Promise<DigestAlgorithm> => (algorithm ??= await remoteDigestAlgorithm(env()));

    h.defineCase({
      id: 'transfer.file-roundtrip',
      title: 'uploadFile then downloadFile round trips random bytes; parent directories are created',
      run: async () => {
        const algo = await digestAlgorithm();
        const dir = await h.tempDir('file');
        const cases: Array<[string, number]> = [
          ['random.bin', 3 * MiB + 123],
          ['empty file', 0],
          ['ünïcødé name.bin', 4096],
        ];
        const base = `/tmp/${uniqueName('file')}`;
        for (const [name, size] of cases) {
          const local = join(dir, 'src', name);
          const localDigest = await writeRandomFile(local, size, algo);
          const remote = `${base}/a/b/c/${name}`;
          await env().uploadFile(local, remote);
          expect(await remoteDigest(env(), remote, algo), `remote digest of ${remote}`).toBe(localDigest);
          const back = join(dir, 'back', 'x', 'y', name);
          await env().downloadFile(remote, back);
          expect(Buffer.compare(await readFile(back), await readFile(local)), `bytes of ${name}`).toBe(0);
        }
        await env().exec(['rm', '-rf', base]);
      },
    });

    h.defineCase({
      id: 'transfer.file-overwrite',
      title: 'uploadFile over an existing file replaces it and carries the exec bit',
      run: async () => {
        const dir = await h.tempDir('overwrite');
        const remote = `/tmp/${uniqueName('over')}/tool.sh`;
        await writeFileWithMode(join(dir, 'v1.sh'), '#!/bin/sh\necho version-one-which-is-longer\n', 0o644);
        await writeFileWithMode(join(dir, 'v2.sh'), '#!/bin/sh\necho v2\n', 0o755);
        await env().uploadFile(join(dir, 'v1.sh'), remote);
        expect((await env().exec(`[ -x ${remote} ] && echo exec || echo plain`)).stdout).toBe('plain\n');
        await env().uploadFile(join(dir, 'v2.sh'), remote);
        expect((await env().exec(['cat', remote])).stdout).toBe('#!/bin/sh\necho v2\n');
        expect((await env().exec([remote])).stdout).toBe('v2\n');
      },
    });

    h.defineCase({
      id: 'transfer.dir-roundtrip',
      title: 'uploadDir/downloadDir keep unicode and spaced names, empty dirs, relative symlinks and modes',
      run: async () => {
        const dir = await h.tempDir('tree');
        const source = join(dir, 'source');
        await makeAwkwardTree(source);
        const remote = `/tmp/${uniqueName('tree')}/not/yet/there`;
        const up = await env().uploadDir(source, remote);
        expect(up.files).toBe(TREE_FILES);
        expect(up.symlinks).toBe(TREE_SYMLINKS);
        expect(up.directories).toBeGreaterThanOrEqual(TREE_DIRS);

        const check = await env().exec(
          [
            'set -e',
            '[ -x run.sh ]',
            '[ ! -x data.bin ]',
            '[ -L link-to-plain ] && [ "$(cat link-to-plain)" = plain ]',
            '[ -L nested/up-link ] && [ "$(cat nested/up-link)" = plain ]',
            '[ -d empty/inner-empty ]',
            '[ -f "with space.txt" ] && [ -f "ünïcødé/日本語 файл.txt" ]',
            '[ -f empty.txt ] && [ ! -s empty.txt ]',
            './run.sh',
          ].join('\n'),
          { cwd: remote },
        );
        expect(check.exitCode, `inside the sandbox: ${check.stderr}`).toBe(0);
        expect(check.stdout).toBe('run-ok\n');

        const target = join(dir, 'back');
        const down = await env().downloadDir(remote, target);
        expect(down.files).toBe(TREE_FILES);
        expect(down.symlinks).toBe(TREE_SYMLINKS);
        expect(down.directories).toBeGreaterThanOrEqual(TREE_DIRS);
        expect(down.bytes).toBe(up.bytes);
        const [want, got] = await Promise.all([snapshotTree(source), snapshotTree(target)]);
        expect(Object.fromEntries(got)).toEqual(Object.fromEntries(want));

        // A trailing slash names the same directory.
        const again = join(dir, 'again');
        await env().downloadDir(`${remote}/`, again);
        expect(Object.fromEntries(await snapshotTree(again))).toEqual(Object.fromEntries(want));
        await env().exec(['rm', '-rf', remote]);
      },
    });

    h.defineCase({
      id: 'transfer.many-files',
      title: '10,000 small files round trip: count and content hash match',
      timeoutMs: 120_000,
      run: async () => {
        const algo = await digestAlgorithm();
        const dir = await h.tempDir('many');
        const source = join(dir, 'source');
        const hash = createHash(algo);
        const pad = (n: number) => String(n).padStart(3, '0');
        for (let d = 0; d < 100; d++) {
          const sub = join(source, `d${pad(d)}`);
          await mkdir(sub, { recursive: true });
          const writes: Array<Promise<void>> = [];
          for (let f = 0; f < 100; f++) {
            const content = `file ${d}/${f} ${randomBytes(6).toString('hex')}\n`;
            hash.update(content);
            writes.push(writeFile(join(sub, `f${pad(f)}.txt`), content));
          }
          await Promise.all(writes);
        }
        const localDigest = hash.digest('hex');
        const remote = `/tmp/${uniqueName('many')}`;
        const up = await env().uploadDir(source, remote);
        expect(up.files).toBe(10_000);
        const r = await run(
          env(),
          `cd ${remote} && n=0; for f in */*; do [ -f "$f" ] && n=$((n+1)); done; echo $n; cat */* | ${algo}sum`,
          'counting inside the sandbox',
        );
        const [count, digestLine] = r.stdout.split('\n');
        expect(Number(count)).toBe(10_000);
        expect(digestLine?.split(/\s+/)[0]).toBe(localDigest);

        const target = join(dir, 'back');
        const down = await env().downloadDir(remote, target);
        expect(down.files).toBe(10_000);
        const back = createHash(algo);
        let files = 0;
        for (const sub of (await readdir(target)).sort()) {
          for (const name of (await readdir(join(target, sub))).sort()) {
            back.update(await readFile(join(target, sub, name)));
            files++;
          }
        }
        expect(files).toBe(10_000);
        expect(back.digest('hex')).toBe(localDigest);
        await env().exec(['rm', '-rf', remote]);
      },
    });

    h.defineCase({
      id: 'transfer.large-file',
      title: 'a 200 MB file round trips (sha256 locally and inside the sandbox)',
      timeoutMs: 180_000,
      run: async () => {
        const algo = await digestAlgorithm();
        const dir = await h.tempDir('large');
        const local = join(dir, 'big.bin');
        const size = 200 * MiB;
        const sha = await writeRandomFile(local, size, 'sha256');
        const inSandbox = algo === 'sha256' ? sha : await digestFile(local, algo);
        const remote = `/tmp/${uniqueName('large')}/big.bin`;
        try {
          await env().uploadFile(local, remote);
          expect(await remoteDigest(env(), remote, algo)).toBe(inSandbox);
          const back = join(dir, 'back', 'big.bin');
          await env().downloadFile(remote, back);
          expect(await digestFile(back, 'sha256')).toBe(sha);
        } finally {
          await env()
            .exec(['rm', '-rf', dirname(remote)])
            .catch(() => undefined);
          await rm(dir, { recursive: true, force: true });
        }
      },
    });

    h.defineCase({
      id: 'transfer.missing-remote',
      title: 'downloading a missing remote path is a TransferError naming the path',
      run: async () => {
        const dir = await h.tempDir('missing');
        const missing = `/tmp/${uniqueName('no-such')}/file.txt`;
        const file = await h.expectBerthError(env().downloadFile(missing, join(dir, 'f')), TransferError);
        expect(file.message).toContain(missing);
        // The whole chain in the assertion's message: a wrong reason must say what happened.
        expect(file.reason, JSON.stringify(serializeError(file))).toBe('not_found');
        expect(await exists(join(dir, 'f'))).toBe(false);
        const tree = await h.expectBerthError(env().downloadDir(missing, join(dir, 'd')), TransferError);
        expect(tree.message).toContain(missing);
        expect(tree.reason, JSON.stringify(serializeError(tree))).toBe('not_found');
      },
    });

    h.defineCase({
      id: 'transfer.wrong-kind',
      title: "downloadDir of a file and downloadFile of a directory are the caller's mistake: a ConfigError naming the path, not a task failure",
      run: async () => {
        const dir = await h.tempDir('kind');
        const base = `/tmp/${uniqueName('kind')}`;
        // A directory with something in it: the sandbox's side is still sending when berth sees
        // what it got and stops reading.
        await run(env(), `mkdir -p ${base}/adir && head -c 8000000 /dev/zero > ${base}/adir/big && echo hi > ${base}/afile`);
        const asDir = await h.expectBerthError(env().downloadDir(`${base}/afile`, join(dir, 'd')), ConfigError);
        expect(asDir.message).toContain(`${base}/afile`);
        expect(asDir.message).toMatch(/not a directory|downloadFile/i);
        const asFile = await h.expectBerthError(env().downloadFile(`${base}/adir`, join(dir, 'f')), ConfigError);
        expect(asFile.message).toContain(`${base}/adir`);
        expect(asFile.message).toMatch(/directory|downloadDir/i);
        for (const error of [asDir, asFile]) expect(error).toMatchObject({ path: 'remotePath', category: 'permanent_infra', retryable: false });
        expect(await exists(join(dir, 'f'))).toBe(false);
      },
    });

    h.defineCase({
      id: 'transfer.relative-path',
      title: 'a relative remote path is a ConfigError',
      run: async () => {
        const dir = await h.tempDir('relative');
        await writeFile(join(dir, 'f.txt'), 'x');
        await h.expectBerthError(env().uploadFile(join(dir, 'f.txt'), 'relative/f.txt'), ConfigError);
        await h.expectBerthError(env().uploadDir(dir, 'relative/dir'), ConfigError);
        await h.expectBerthError(env().downloadFile('etc/passwd', join(dir, 'p')), ConfigError);
        await h.expectBerthError(env().downloadDir('etc', join(dir, 'e')), ConfigError);
      },
    });

    h.defineCase({
      id: 'transfer.missing-local',
      title: "uploading a missing local path is a TransferError with reason 'local_io'",
      run: async () => {
        const dir = await h.tempDir('missing-local');
        const missing = join(dir, 'does-not-exist.bin');
        const file = await h.expectBerthError(env().uploadFile(missing, '/tmp/never.bin'), TransferError);
        expect(file.reason).toBe('local_io');
        expect(file.message).toContain(missing);
        const tree = await h.expectBerthError(env().uploadDir(join(dir, 'no-dir'), '/tmp/never-dir'), TransferError);
        expect(tree.reason).toBe('local_io');
        // The environment is still fine.
        expect((await env().exec(['echo', 'ok'])).stdout).toBe('ok\n');
      },
    });

    h.defineCase({
      id: 'transfer.unsafe-symlinks',
      title: "symlinks leading outside the target are skipped (counted), kept, or refused ('unsafe_entry') as asked; nothing is written outside",
      run: async () => {
        const dir = await h.tempDir('unsafe');
        const base = `/tmp/${uniqueName('unsafe')}`;
        await run(
          env(),
          [
            `mkdir -p ${base}/abs ${base}/up`,
            `echo fine > ${base}/abs/ok.txt && ln -s /etc/passwd ${base}/abs/evil && ln -s ok.txt ${base}/abs/good`,
            `echo fine > ${base}/up/ok.txt && ln -s ../../.. ${base}/up/up`,
          ].join(' && '),
        );
        const passwdBefore = await readFile('/etc/passwd').catch(() => undefined);
        /** Every symlink under `target`, and where it leads. */
        const links = async (target: string) =>
          [...(await snapshotTree(target))].flatMap(([rel, entry]) =>
            entry.type === 'symlink' ? [[rel, resolve(dirname(join(target, rel)), entry.target)] as const] : [],
          );
        const inside = (target: string, to: string) => to === target || to.startsWith(`${target}${sep}`);
        for (const name of ['abs', 'up']) {
          const outer = join(dir, name);
          await mkdir(outer, { recursive: true });
          // The default: such links are left out and counted; the rest of the tree arrives.
          const skipped = await env().downloadDir(`${base}/${name}`, join(outer, 'skip'));
          expect(skipped.skippedSymlinks).toBe(1);
          expect(await readFile(join(outer, 'skip', 'ok.txt'), 'utf8')).toBe('fine\n');
          for (const [rel, to] of await links(join(outer, 'skip'))) expect(inside(join(outer, 'skip'), to), `${rel} leads outside`).toBe(true);
          // 'keep': made as they are, as docker cp does.
          const kept = await env().downloadDir(`${base}/${name}`, join(outer, 'keep'), { outsideLinks: 'keep' });
          expect(kept.skippedSymlinks).toBe(0);
          expect((await links(join(outer, 'keep'))).some(([, to]) => !inside(join(outer, 'keep'), to))).toBe(true);
          // 'refuse': the whole download fails, and leaves nothing that leads out.
          const target = join(outer, 'refuse');
          const error = await h.expectBerthError(env().downloadDir(`${base}/${name}`, target, { outsideLinks: 'refuse' }), TransferError);
          expect(error.reason, error.message).toBe('unsafe_entry');
          if (await exists(target)) for (const [rel, to] of await links(target)) expect(inside(target, to), `${rel} leads outside`).toBe(true);
          expect((await readdir(outer)).sort()).toEqual((await exists(target)) ? ['keep', 'refuse', 'skip'] : ['keep', 'skip']);
        }
        expect(await readFile(join(dir, 'abs', 'skip', 'good'), 'utf8')).toBe('fine\n');
        const passwdAfter = await readFile('/etc/passwd').catch(() => undefined);
        expect(passwdAfter).toEqual(passwdBefore);
      },
    });

    h.defineCase({
      id: 'transfer.unsafe-local-target',
      title: 'downloadDir does not write through a symlink already present in the local target',
      run: async () => {
        const dir = await h.tempDir('local-link');
        const outside = join(dir, 'outside');
        const target = join(dir, 'target');
        await mkdir(outside, { recursive: true });
        await makeSymlink(outside, join(target, 'x'));
        const remote = `/tmp/${uniqueName('through')}`;
        await run(env(), `mkdir -p ${remote}/x && echo pwned > ${remote}/x/file.txt`);
        const refusal = await env()
          .downloadDir(remote, target)
          .then(
            () => undefined,
            (error: unknown) => error,
          );
        if (refusal === undefined) {
          // Done: the symlink was replaced by the real directory, holding what was downloaded.
          const x = await lstat(join(target, 'x'));
          expect(x.isSymbolicLink(), 'target/x is still the symlink after a download that succeeded').toBe(false);
          expect(x.isDirectory()).toBe(true);
          expect(await readFile(join(target, 'x', 'file.txt'), 'utf8')).toBe('pwned\n');
        } else {
          const refused = await h.expectBerthError(Promise.reject(refusal), TransferError);
          expect(refused.reason).toBe('unsafe_entry');
          expect((await lstat(join(target, 'x'))).isSymbolicLink(), 'target/x after the refusal').toBe(true);
        }
        expect(await readdir(outside), 'nothing may land in the directory the local symlink points to').toEqual([]);
      },
    });

    h.defineCase({
      id: 'transfer.remote-not-a-directory',
      title: 'uploading below a remote file is a TransferError naming the path, not a retryable infra failure',
      run: async () => {
        const dir = await h.tempDir('not-a-dir');
        await writeFile(join(dir, 'f.txt'), 'x');
        const base = `/tmp/${uniqueName('notdir')}`;
        await run(env(), `mkdir -p ${base} && echo file > ${base}/afile`);
        const file = await h.expectBerthError(env().uploadFile(join(dir, 'f.txt'), `${base}/afile/child.txt`), TransferError);
        expect(file.message).toContain(`${base}/afile/child.txt`);
        expect(file.category, describeError(file)).not.toBe('transient_infra');
        expect(file.retryable).toBe(false);
        const tree = await h.expectBerthError(env().uploadDir(dir, `${base}/afile`), TransferError);
        expect(tree.category, describeError(tree)).not.toBe('transient_infra');
        expect(tree.retryable).toBe(false);
      },
    });
  });
}
