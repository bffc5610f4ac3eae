// The backend kit's SandboxEnvironment over a transport whose sandbox is this machine (real child
// processes, real tar): exec semantics, tar over exec and the lifecycle, without any engine.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BackendUnavailableError, CancelledError, ConfigError, StartupTimeoutError, TransferError } from '../src/errors.js';
import { SandboxEnvironment } from '../src/kit/environment.js';
import type { SandboxTransport } from '../src/kit/transport.js';
import { parseEnvironmentSpec } from '../src/spec.js';
import { LocalTransport, type LocalFaults } from './support/local-transport.js';

const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'berth-kit-'));
  dirs.push(dir);
  return dir;
}

function environment(transport: SandboxTransport, spec: Record<string, unknown> = {}): SandboxEnvironment {
  return new SandboxEnvironment({
    backend: 'local',
    id: `local-${Math.random().toString(16).slice(2, 8)}`,
    spec: parseEnvironmentSpec({ image: 'local:latest', ...spec }),
    transport,
    transfers: 'exec',
  });
}

async function started(faults: LocalFaults = {}): Promise<{ env: SandboxEnvironment; transport: LocalTransport }> {
  const transport = new LocalTransport(faults);
  const env = environment(transport);
  await env.start();
  return { env, transport };
}

/** Running or sleeping; a zombie waiting for its reaper is dead. */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

describe('kit exec over a transport', () => {
  it('runs shell strings and exact argv; exit codes are data', async () => {
    const { env } = await started();
    expect((await env.exec('echo "$((1+2))"')).stdout).toBe('3\n');
    expect((await env.exec(['printf', '%s|', 'a b', '$HOME'])).stdout).toBe('a b|$HOME|');
    const failed = await env.exec('echo oops >&2; exit 3');
    expect(failed).toMatchObject({ exitCode: 3, stderr: 'oops\n', timedOut: false });
  });

  it('streams stdin from an async iterable with backpressure, byte for byte', async () => {
    const { env } = await started();
    const chunk = Buffer.alloc(1024 * 1024, 7);
    const hash = createHash('sha256');
    async function* source() {
      for (let i = 0; i < 20; i++) {
        hash.update(chunk);
        yield chunk;
      }
    }
    const result = await env.exec('sha256sum', { stdin: source() });
    expect(result.stdout.split(' ')[0]).toBe(hash.digest('hex'));
  });

  it('keeps the tail when output passes maxOutputBytes', async () => {
    const { env } = await started();
    const result = await env.exec('i=0; while [ $i -lt 2000 ]; do echo line-$i; i=$((i+1)); done', { maxOutputBytes: 100 });
    expect(result.truncated.stdout).toBe(true);
    expect(result.stdout.endsWith('line-1999\n')).toBe(true);
    expect(result.stdoutBytes.length).toBe(100);
  });

  it('a timeout kills the whole process tree and is a result', async () => {
    const { env } = await started();
    const pids: number[] = [];
    const result = await env.exec('sleep 101 & echo $!; sh -c "sleep 102 & echo \\$!; wait"', {
      timeoutMs: 300,
      onStdout: (c) => pids.push(...Buffer.from(c).toString().trim().split('\n').map(Number)),
    });
    expect(result).toMatchObject({ timedOut: true, signal: 'SIGKILL' });
    expect(pids.length).toBe(2);
    for (const pid of pids) expect(alive(pid), `pid ${pid}`).toBe(false);
  });

  it("the caller's abort kills the command and rejects with CancelledError", async () => {
    const { env } = await started();
    // The command's shell and its child say their pids; the abort comes once both are seen running.
    const controller = new AbortController();
    const pids: number[] = [];
    const seenAlive: boolean[] = [];
    const error = await env
      .exec('echo $$; sleep 30 >/dev/null 2>&1 & echo $!; wait', {
        signal: controller.signal,
        onStdout: (chunk) => {
          for (const pid of Buffer.from(chunk).toString().trim().split('\n').map(Number)) {
            pids.push(pid);
            seenAlive.push(alive(pid));
          }
          if (pids.length === 2) controller.abort(new Error('caller gave up'));
        },
      })
      .catch((e: unknown) => e);
    try {
      expect(CancelledError.isInstance(error), String(error)).toBe(true);
      expect(seenAlive, `the command ${pids.join(', ')} before the abort`).toEqual([true, true]);
      for (const pid of pids) expect(alive(pid), `pid ${pid} once the exec rejected`).toBe(false);
    } finally {
      for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGKILL');
    }
  });

  it('a failed command in a sandbox replaced under its name is SandboxLostError (replaceable transports only)', async () => {
    class Replaced extends LocalTransport {
      readonly replaceable = true;
      inspects = 0;
      override async inspect() {
        this.inspects++;
        return { running: false as const, reason: 'container restarted' };
      }
    }
    const replaced = new Replaced();
    const env = environment(replaced);
    await env.start();
    await expect(env.exec('true')).resolves.toMatchObject({ exitCode: 0 });
    expect(replaced.inspects).toBe(0);
    await expect(env.exec('exit 1')).rejects.toMatchObject({ name: 'SandboxLostError', lastState: 'container restarted' });
    // Without the flag a non-zero exit is data, and nobody asks.
    const plain = new LocalTransport({ running: false });
    const other = environment(plain);
    await other.start();
    await expect(other.exec('exit 1')).resolves.toMatchObject({ exitCode: 1 });
  });

  it('refuses bad input with a ConfigError naming it', async () => {
    const { env } = await started();
    await expect(env.exec([])).rejects.toMatchObject({ type: 'ConfigError', path: 'command' });
    await expect(env.exec('true', { env: { 'BAD-NAME': 'x' } })).rejects.toMatchObject({ path: 'opts.env.BAD-NAME' });
    await expect(env.exec('true', { timeoutMs: 0 })).rejects.toMatchObject({ path: 'opts.timeoutMs' });
  });
});

describe('kit transfers over exec', () => {
  it('round trips a tree (modes, symlinks, empty dirs) through tar in the sandbox', async () => {
    const { env } = await started();
    const src = await tempDir();
    await mkdir(join(src, 'empty'));
    await writeFile(join(src, 'run.sh'), '#!/bin/sh\necho hi\n', { mode: 0o755 });
    await symlink('run.sh', join(src, 'link'));
    const remote = join(await tempDir(), 'remote');
    const up = await env.uploadDir(src, remote);
    expect(up).toMatchObject({ files: 1, directories: 1, symlinks: 1 });
    expect((await env.exec([join(remote, 'run.sh')])).stdout).toBe('hi\n');
    const back = join(await tempDir(), 'back');
    const down = await env.downloadDir(remote, back);
    expect(down).toMatchObject({ files: 1, directories: 1, symlinks: 1 });
    expect(await readFile(join(back, 'link'), 'utf8')).toBe('#!/bin/sh\necho hi\n');
  });

  it('an upload the sandbox received only part of is a transient TransferError, never a success', async () => {
    const { env } = await started({ stdinLimit: 10_000 });
    const src = await tempDir();
    await writeFile(join(src, 'big.bin'), Buffer.alloc(300_000, 1));
    const error = await env.uploadFile(join(src, 'big.bin'), join(await tempDir(), 'big.bin')).catch((e: unknown) => e);
    expect(TransferError.isInstance(error), String(error)).toBe(true);
    expect(error).toMatchObject({ category: 'transient_infra', retryable: true });
    expect((error as TransferError).reason).toMatch(/interrupted|remote_io/);
  });

  it('a download whose tail was lost on the way is a transient TransferError, even when tar exited 0', async () => {
    const src = await tempDir();
    for (let i = 0; i < 40; i++) await writeFile(join(src, `f${i}.txt`), `file ${i}\n`.repeat(50));
    // Cut at an entry boundary (a whole number of blocks, no end-of-archive blocks): the parser alone would take it.
    const { env } = await started({ stdoutLimit: 512 * 20 });
    const error = await env.downloadDir(src, join(await tempDir(), 'back')).catch((e: unknown) => e);
    expect(TransferError.isInstance(error), String(error)).toBe(true);
    expect(error).toMatchObject({ category: 'transient_infra', retryable: true, reason: 'interrupted' });
    expect((error as Error).message).toMatch(/end-of-archive blocks/);
    const whole = await started();
    expect(await whole.env.downloadDir(src, join(await tempDir(), 'back'))).toMatchObject({ files: 40 });
  });

  it('a missing remote path is not_found even when the exit status comes after the (empty) output, by a separate call', async () => {
    // Before: the empty archive failed extraction first, the kit abandoned the process, and the
    // status that says "not found" was lost: an 'interrupted' transient error (Modal, under load).
    const { env } = await started({ exitReportDelayMs: 300 });
    const missing = join(await tempDir(), 'no-such', 'file.txt');
    const file = await env.downloadFile(missing, join(await tempDir(), 'f')).catch((e: unknown) => e);
    expect(file).toMatchObject({ reason: 'not_found', category: 'task_failure' });
    const dir = await env.downloadDir(missing, join(await tempDir(), 'd')).catch((e: unknown) => e);
    expect(dir).toMatchObject({ reason: 'not_found', category: 'task_failure' });
  });

  it('an image without tar is a ConfigError that says so', async () => {
    const bin = await tempDir();
    for (const tool of ['sh', 'cat', 'tee', 'wc']) {
      await symlink(`/bin/${tool}`, join(bin, tool)).catch(() => symlink(`/usr/bin/${tool}`, join(bin, tool)));
    }
    const { env } = await started({ path: bin });
    const src = await tempDir();
    await writeFile(join(src, 'f'), 'x');
    const error = await env.uploadFile(join(src, 'f'), join(src, 'g')).catch((e: unknown) => e);
    expect(ConfigError.isInstance(error), String(error)).toBe(true);
    expect((error as ConfigError).message).toMatch(/no tar/);
  });

  it("tar's failure in the sandbox is a TransferError with tar's own words", async () => {
    const { env } = await started();
    const dir = await tempDir();
    await writeFile(join(dir, 'plain-file'), 'x');
    const error = await env.uploadFile(join(dir, 'plain-file'), join(dir, 'plain-file', 'under', 'f')).catch((e: unknown) => e);
    expect(TransferError.isInstance(error), String(error)).toBe(true);
    expect(error).toMatchObject({ reason: 'remote_io', retryable: false });
    expect((error as TransferError).message).toMatch(/tar in the sandbox exited/);
  });

  it('a local target that cannot be made says which parent is in the way', async () => {
    const { env } = await started();
    const dir = await tempDir();
    await writeFile(join(dir, 'afile'), 'x');
    const error = await env.downloadDir('/tmp', join(dir, 'afile', 'sub', 'deeper')).catch((e: unknown) => e);
    expect(error).toMatchObject({ type: 'TransferError', reason: 'local_io' });
    expect((error as Error).message).toContain(`${join(dir, 'afile')} is a file, not a directory`);
  });

  it('a missing remote path is not_found (the task), and a dead sandbox is sandbox_lost (transient)', async () => {
    const { env, transport } = await started();
    const missing = await env.downloadDir('/definitely/not/here', await tempDir()).catch((e: unknown) => e);
    expect(missing).toMatchObject({ type: 'TransferError', reason: 'not_found', category: 'task_failure' });
    transport.faults.running = false;
    const dead = await env.downloadDir('/tmp', await tempDir()).catch((e: unknown) => e);
    expect(dead).toMatchObject({ type: 'TransferError', reason: 'sandbox_lost', category: 'transient_infra' });
    expect((dead as TransferError).cause).toMatchObject({ type: 'SandboxLostError' });
  });
});

describe('kit lifecycle', () => {
  it('operations before start and after teardown are ConfigErrors; teardown is idempotent', async () => {
    const env = environment(new LocalTransport());
    await expect(env.exec('true')).rejects.toMatchObject({ type: 'ConfigError' });
    await env.start();
    await env.teardown();
    await env.teardown();
    expect(env.phase).toBe('stopped');
    await expect(env.exec('true')).rejects.toMatchObject({ type: 'ConfigError', message: expect.stringContaining('torn down') });
  });

  it('the startup deadline covers a create call that never returns, and says what it last saw', async () => {
    let removed = 0;
    const hung: SandboxTransport = Object.assign(new LocalTransport(), {
      create: (ctx: { progress(u: { status: string }): void }) => {
        ctx.progress({ status: 'waiting for a node' });
        return new Promise<void>(() => undefined);
      },
      remove: async () => void removed++,
    });
    const env = environment(hung, { timeouts: { startupMs: 200 } });
    const error = await env.start().catch((e: unknown) => e);
    expect(StartupTimeoutError.isInstance(error), String(error)).toBe(true);
    expect(error).toMatchObject({ lastStatus: 'waiting for a node', retryable: true });
    expect(removed).toBe(1);
  }, 15_000);

  it('a start that fails leaves no timer running and removes what it made', async () => {
    let removed = 0;
    const refusing = Object.assign(new LocalTransport(), {
      create: async () => {
        throw new ConfigError({ message: 'the spec is wrong', path: 'spec.image' });
      },
      remove: async () => void removed++,
    });
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timers();
    const error = await environment(refusing)
      .start()
      .catch((e: unknown) => e);
    expect(ConfigError.isInstance(error)).toBe(true);
    expect(removed).toBe(1);
    expect(timers()).toBe(before);
  });

  it('a teardown while the backend is unreachable keeps trying (an engine restart), so the sandbox is not left behind', async () => {
    let attempts = 0;
    const restarting = Object.assign(new LocalTransport(), {
      remove: async () => {
        if (++attempts <= 2) throw new BackendUnavailableError({ operation: 'teardown', backend: 'local', message: 'the engine is unreachable (ENOENT)' });
      },
    });
    const env = environment(restarting);
    await env.start();
    await env.teardown();
    expect(attempts).toBe(3);
    expect(env.phase).toBe('stopped');
  });

  it('a teardown that failed can be retried', async () => {
    let attempts = 0;
    const flaky = Object.assign(new LocalTransport(), {
      remove: async () => {
        if (++attempts === 1) throw new Error('engine restarting');
      },
    });
    const env = environment(flaky);
    await env.start();
    await expect(env.teardown()).rejects.toThrow('engine restarting');
    await env.teardown();
    expect(env.phase).toBe('stopped');
  });
});
