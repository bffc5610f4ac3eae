// A server that speaks only v4.channel.k8s.io (Kubernetes before 1.30) cannot close a command's
// stdin: berth frames stdin instead. The proxy offers the real API server only v4, so the whole
// path runs for real: commands reading to EOF, commands reading part, tar uploads and downloads.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Environment } from '@berth/core';
import { createK8sBackend } from '@berth/backend-k8s';
import { ApiProxy } from './support/api-proxy.js';
import { TOLERATE_FAULT } from '@berth/test-support/kube-cluster';

let proxy: ApiProxy;
let env: Environment;
const dirs: string[] = [];

beforeAll(async () => {
  proxy = await ApiProxy.start();
  proxy.execProtocols = ['v4.channel.k8s.io'];
  env = await createK8sBackend({ kubeconfig: proxy.kubeconfig(), tolerations: TOLERATE_FAULT }).start({
    image: 'berth-test/busybox:latest',
    network: 'public',
  });
});
afterAll(async () => {
  await env?.teardown();
  await proxy?.close();
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

describe('k8s exec over v4.channel.k8s.io (stdin framed)', () => {
  it('the server really speaks v4 here: commands with stdin go framed', async () => {
    await expect(env.exec('cat', { stdin: 'x' })).resolves.toMatchObject({ exitCode: 0, stdout: 'x' });
    const framed = proxy.seen.filter((r) => r.status === 101 && decodeURIComponent(r.path.replace(/\+/g, ' ')).includes('base64 -d'));
    expect(framed.length).toBeGreaterThan(0);
  });

  it('a command reading to EOF gets every byte, binary included, and ends', async () => {
    const data = randomBytes(3 * 1024 * 1024 + 7);
    const result = await env.exec('md5sum', { stdin: data });
    expect(result.exitCode).toBe(0);
    expect(result.stdout.split(' ')[0]).toBe(createHash('md5').update(data).digest('hex'));
    await expect(env.exec('cat', { stdin: '' })).resolves.toMatchObject({ exitCode: 0, stdout: '' });
    await expect(env.exec('wc -c', { stdin: 'abc' })).resolves.toMatchObject({ exitCode: 0, stdout: expect.stringMatching(/^\s*3\s*$/) });
  });

  it('a command that reads part of stdin and exits early keeps its exit code', async () => {
    const result = await env.exec('head -c 5 | wc -c; exit 7', { stdin: randomBytes(2 * 1024 * 1024) });
    expect(result).toMatchObject({ exitCode: 7, stdout: expect.stringMatching(/^\s*5\s*$/) });
  });

  it('a terminal is sized on v4 too, and its typed input goes raw, never framed', async () => {
    const before = proxy.seen.length;
    const r = await env.exec(['sh'], { tty: { rows: 33, cols: 101 }, stdin: 'stty size; exit 4\n', timeoutMs: 20_000 });
    expect(r.timedOut, r.stdout).toBe(false);
    expect(r.exitCode, r.stdout).toBe(4);
    expect(r.stdout).toContain('33 101\r\n');
    const upgrades = proxy.seen.slice(before).filter((s) => s.status === 101);
    expect(upgrades.some((s) => s.path.includes('tty=true'))).toBe(true);
    expect(upgrades.some((s) => decodeURIComponent(s.path.replace(/\+/g, ' ')).includes('base64 -d'))).toBe(false);
  });

  it('tar over exec moves a tree both ways', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'berth-v4-'));
    dirs.push(dir);
    await writeFile(join(dir, 'a.txt'), 'alpha\n');
    await writeFile(join(dir, 'big.bin'), randomBytes(1024 * 1024));
    await env.uploadDir(dir, '/work/up');
    expect((await env.exec('cat /work/up/a.txt')).stdout).toBe('alpha\n');
    const back = await mkdtemp(join(tmpdir(), 'berth-v4-back-'));
    dirs.push(back);
    await env.downloadDir('/work/up', back);
    expect(await readFile(join(back, 'big.bin'))).toEqual(await readFile(join(dir, 'big.bin')));
  });
});
