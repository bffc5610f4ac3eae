// Docker-only behaviour the shared conformance suite does not cover.
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, TaskFailure, type Environment } from '@berth/core';
import { createDockerBackend } from '@berth/backend-docker';
import { holdingCreateAnswer } from './support/held-create.js';

const docker = new Docker();
const BASIC = 'berth-test/busybox:latest';
const envs: Environment[] = [];
afterAll(async () => {
  await Promise.all(envs.map((e) => e.teardown()));
});

/** How many of `sleep 51` / `sleep 52` run in the sandbox: polled until there are `want`, or `withinMs` passed. */
async function sleepersWithin(env: Environment, want: number, withinMs: number): Promise<number> {
  const probe = 'for p in /proc/[0-9]*; do tr "\\0" " " < $p/cmdline 2>/dev/null; echo; done';
  const deadline = Date.now() + withinMs;
  for (;;) {
    const seen = (await env.exec(probe)).stdout.split('\n').filter((line) => /^sleep 5[12] $/.test(line)).length;
    if (seen === want || Date.now() >= deadline) return seen;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('docker backend specifics', () => {
  it('applies resources, network none, labels and bind mounts to the container', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'berth-bind-'));
    await writeFile(join(dir, 'in.txt'), 'from the host');
    const env = await createDockerBackend({ labels: { team: 'evals' } }).start({
      image: BASIC,
      resources: { cpus: 1.5, memoryMb: 300 },
      network: 'none',
      labels: { 'berth.example': 'specifics' },
      mounts: [{ type: 'bind', source: dir, target: '/host', readOnly: true }],
    });
    envs.push(env);
    const info = await docker.getContainer(env.id).inspect();
    expect(info.HostConfig.NanoCpus).toBe(1_500_000_000);
    expect(info.HostConfig.Memory).toBe(300 * 1024 * 1024);
    expect(info.HostConfig.NetworkMode).toBe('none');
    expect(info.Config.Labels).toMatchObject({ 'berth.managed': 'true', 'berth.environment': env.id, team: 'evals', 'berth.example': 'specifics' });
    expect((await env.exec('cat /host/in.txt')).stdout).toBe('from the host');
    const write = await env.exec('echo x > /host/new.txt');
    expect(write.exitCode).not.toBe(0); // read-only
    // no interface but loopback
    expect((await env.exec('ls /sys/class/net')).stdout.trim()).toBe('lo');
    await env.teardown();
    await rm(dir, { recursive: true });
  });

  it('a timeout kills a command that cleared its environment (env -i), and its children', async () => {
    const env = await createDockerBackend().start({ image: BASIC, network: 'none' });
    envs.push(env);
    const t0 = Date.now();
    const result = await env.exec(['env', '-i', 'PATH=/bin', 'sh', '-c', 'sleep 997 & sleep 998'], { timeoutMs: 500 });
    expect(result.timedOut).toBe(true);
    expect(Date.now() - t0).toBeLessThan(5000);
    const procs = (await env.exec('for p in /proc/[0-9]*; do tr "\\0" " " < $p/cmdline 2>/dev/null; echo; done')).stdout;
    expect(procs).toContain('sleep 86400'); // the listing works: berth's own init loop is there
    expect(procs).not.toMatch(/sleep 99[78]/);
    await env.teardown();
  });

  it("opts.user: the runtime's unknown group is a ConfigError, as its unknown user is (the kit's launcher words them alike)", async () => {
    const env = await createDockerBackend().start({ image: BASIC, network: 'none' });
    envs.push(env);
    const error = await env.exec(['true'], { user: 'root:berth-no-such-group' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(ConfigError.isInstance(error), String(error)).toBe(true);
    expect((error as ConfigError).path).toBe('opts.user');
    expect((error as Error).message).toContain('unable to find group berth-no-such-group: no matching entries in group file');
    // As the engine gives it: HOME is / for a uid not in /etc/passwd.
    expect((await env.exec('echo "$(id -u):$(id -g) $HOME"', { user: '1234' })).stdout).toBe('1234:0 /\n');
    await env.teardown();
  });

  it('a sandbox past timeouts.lifetimeMs is gone, as a task failure (LifetimeExceeded), not a retryable loss', async () => {
    const env = await createDockerBackend().start({ image: BASIC, network: 'none', timeouts: { lifetimeMs: 1000 } });
    envs.push(env);
    expect((await env.exec('true')).exitCode).toBe(0);
    await new Promise((r) => setTimeout(r, 1800));
    const error = await env.exec('true').catch((e: unknown) => e);
    // The task outlived its sandbox: its own doing, not a flake worth a retry.
    expect(TaskFailure.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ type: 'LifetimeExceeded', category: 'task_failure', retryable: false });
    const dir = await mkdtemp(join(tmpdir(), 'berth-life-'));
    const download = await env.downloadFile('/etc/passwd', join(dir, 'x')).catch((e: unknown) => e);
    expect(download).toMatchObject({ type: 'TransferError', category: 'task_failure' });
    await rm(dir, { recursive: true });
    await env.teardown();
  });

  it('an image without /bin/sh is a ConfigError at start, every time, and nothing is left', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'berth-noshell-'));
    await writeFile(join(dir, 'hello'), 'no shell here');
    execFileSync('tar', ['-C', dir, '-cf', join(dir, '..', `${dir.split('/').pop()}.tar`), '.']);
    execFileSync('docker', ['import', `${dir}.tar`, 'berth-test/no-shell:latest'], { stdio: 'ignore' });
    try {
      for (let i = 0; i < 5; i++) {
        const error = await createDockerBackend()
          .start({ image: 'berth-test/no-shell:latest', network: 'none' })
          .catch((e: unknown) => e);
        expect(ConfigError.isInstance(error), String(error)).toBe(true);
        expect((error as ConfigError).message).toContain('/bin/sh');
        expect((error as ConfigError).retryable).toBe(false);
      }
    } finally {
      await docker
        .getImage('berth-test/no-shell:latest')
        .remove({ force: true })
        .catch(() => undefined);
      await rm(dir, { recursive: true });
      await rm(`${dir}.tar`);
    }
  });

  it('transfers over exec into an image without tar are a ConfigError that says so; the archive API still works', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'berth-notar-'));
    const root = join(dir, 'root');
    // busybox's own sh finds its tar applet without any link, so the shell here is the host's dash
    // (with the libraries it loads), and the other tools are busybox applets: everything but tar.
    execFileSync('mkdir', ['-p', join(root, 'bin'), join(root, 'tmp'), join(root, 'proc')]);
    execFileSync('cp', ['/bin/busybox', '/bin/dash', join(root, 'bin')]);
    execFileSync('ln', ['-s', 'dash', join(root, 'bin', 'sh')]);
    for (const lib of execFileSync('ldd', ['/bin/dash'])
      .toString()
      .match(/\/\S+\.so[.\d]*/g) ?? []) {
      execFileSync('cp', ['--parents', '-L', lib, root]);
    }
    // tr, for the probe below: /proc/<pid>/cmdline separates argv with NULs.
    for (const applet of ['sleep', 'cat', 'kill', 'mkdir', 'mktemp', 'mkfifo', 'tee', 'wc', 'rm', 'tr']) {
      execFileSync('ln', ['-s', 'busybox', join(root, 'bin', applet)]);
    }
    execFileSync('tar', ['-C', root, '-cf', join(dir, 'root.tar'), '.']);
    execFileSync('docker', ['import', join(dir, 'root.tar'), 'berth-test/no-tar:latest'], { stdio: 'ignore' });
    await writeFile(join(dir, 'f.txt'), 'x');
    try {
      const viaExec = await createDockerBackend({ transfers: 'exec' }).start({ image: 'berth-test/no-tar:latest', network: 'none' });
      envs.push(viaExec);
      const error = await viaExec.uploadFile(join(dir, 'f.txt'), '/tmp/f.txt').catch((e: unknown) => e);
      expect(ConfigError.isInstance(error), String(error)).toBe(true);
      expect((error as ConfigError).message).toMatch(/no tar/);
      expect(error).toMatchObject({ path: 'spec.image', operation: 'upload', retryable: false });
      // No /etc/passwd here either: the tree killer runs as uid 0, not as the name 'root'. The probe
      // is first seen to find both sleepers while they run, then to find neither once the timeout fired.
      const timed = viaExec.exec('sleep 51 & sleep 52', { timeoutMs: 3000 });
      expect(await sleepersWithin(viaExec, 2, 2500)).toBe(2);
      expect((await timed).timedOut).toBe(true);
      expect(await sleepersWithin(viaExec, 0, 1000)).toBe(0);
      await viaExec.teardown();
      const native = await createDockerBackend().start({ image: 'berth-test/no-tar:latest', network: 'none' });
      envs.push(native);
      await native.uploadFile(join(dir, 'f.txt'), '/tmp/f.txt');
      expect((await native.exec('cat /tmp/f.txt')).stdout).toBe('x');
      await native.teardown();
    } finally {
      await docker
        .getImage('berth-test/no-tar:latest')
        .remove({ force: true })
        .catch(() => undefined);
      await rm(dir, { recursive: true });
    }
  });

  it('teardown during start leaves nothing behind', async () => {
    // The engine has made the container, the start still waits for the create's answer: teardown now.
    const proxy = await holdingCreateAnswer();
    try {
      const env = createDockerBackend({ socketPath: proxy.socketPath }).environment({ image: BASIC, network: 'none' });
      const starting = env.start().then(
        () => 'started',
        (e: unknown) => e,
      );
      await Promise.race([proxy.held, starting.then((outcome) => Promise.reject(new Error(`start settled before its create was held: ${String(outcome)}`)))]);
      expect(env.phase).toBe('starting');
      // The probe below sees the container while it exists (asked of the engine directly).
      expect((await docker.getContainer(env.id).inspect()).Name).toBe(`/${env.id}`);
      const tearing = env.teardown();
      proxy.release();
      await starting;
      await tearing;
      expect(env.phase).toBe('stopped');
      await expect(docker.getContainer(env.id).inspect()).rejects.toMatchObject({ statusCode: 404 });
    } finally {
      await proxy.close();
    }
  });

  it('uploading into /tmp keeps /tmp world-writable', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'berth-up-'));
    await writeFile(join(dir, 'a.txt'), 'a');
    const env = await createDockerBackend().start({ image: BASIC, network: 'none' });
    envs.push(env);
    await env.uploadDir(dir, '/tmp');
    expect((await env.exec(['stat', '-c', '%a', '/tmp'])).stdout.trim()).toBe('1777');
    expect((await env.exec('cat /tmp/a.txt')).stdout).toBe('a');
    await env.downloadFile('/tmp/a.txt', join(dir, 'back.txt'));
    expect(await readFile(join(dir, 'back.txt'), 'utf8')).toBe('a');
    await env.teardown();
    await rm(dir, { recursive: true });
  });
});

describe('docker start refusals', () => {
  it('a bind mount of a missing host path is a ConfigError naming spec.mounts', async () => {
    const error = await createDockerBackend()
      .start({ image: BASIC, network: 'none', mounts: [{ type: 'bind', source: '/definitely/not/here', target: '/x' }] })
      .catch((e: unknown) => e);
    expect(ConfigError.isInstance(error), String(error)).toBe(true);
    expect(error).toMatchObject({ path: 'spec.mounts', retryable: false });
  });
});
