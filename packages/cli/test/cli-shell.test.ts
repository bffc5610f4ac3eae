import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { berth, collect, spawnInPty, waitForOutput } from './support/berth-bin.js';
import { writeDataset } from './support/dataset.js';
import { containerLifecycle, containersLabelled } from './support/docker-state.js';

const docker = new Docker();
let root: string;
let taskDir: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'berth-cli-shell-'));
  await writeDataset(join(root, 'tasks'), [
    { id: 'shelled', kind: 'pass' },
    { id: 'other', kind: 'pass' },
  ]);
  taskDir = join(root, 'tasks', 'shelled');
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('berth shell and berth exec', () => {
  it('shell: a command typed into a real terminal runs in the sandbox (tests and solution uploaded); exit ends it and removes the sandbox', async () => {
    const since = Date.now();
    const child = spawnInPty(['shell', taskDir], { cols: 91, rows: 27 });
    const done = collect(child, { timeoutMs: 90_000, keepStdin: true });
    const banner = await waitForOutput(child, /it is removed when this ends/);
    // The sandbox the shell names is there while it runs, and the label probe below finds it.
    const id = /berth: sandbox (\S+)/.exec(banner)?.[1];
    expect(id, banner).toBeDefined();
    expect((await docker.getContainer(id!).inspect()).State.Running).toBe(true);
    expect(await containersLabelled('berth.task=shelled')).toHaveLength(1);
    // Typed as a person would, a line at a time; the answers come back through the pty.
    child.stdin!.write('echo typed-$((6*7)); stty size; test -t 0 && echo on-a-tty\r');
    await waitForOutput(child, /typed-42/);
    child.stdin!.write('sh /solution/solve.sh && sh /tests/test.sh\r');
    await waitForOutput(child, /PASSED 1 test/);
    child.stdin!.write('exit 3\r');
    const result = await done;
    expect(result.stdout).toMatch(/27 91/);
    expect(result.stdout).toContain('on-a-tty');
    expect(result.code).toBe(3);
    expect(await containersLabelled('berth.task=shelled')).toEqual([]);
    await expect(docker.getContainer(id!).inspect()).rejects.toMatchObject({ statusCode: 404 });
    expect(await containerLifecycle(since, 'berth.task=shelled')).toEqual([
      { action: 'create', name: id },
      { action: 'destroy', name: id },
    ]);
  }, 120_000);

  it('shell with piped input (no terminal): runs the lines, and the end of the input ends the shell', async () => {
    const since = Date.now();
    const result = await berth(['shell', taskDir], { input: 'echo piped-$((2+3))\nstty size\n' });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('piped-5');
    expect(result.stdout).toContain('24 80');
    expect(await containersLabelled('berth.task=shelled')).toEqual([]);
    // The engine saw the sandbox the shell named made with that label, and removed.
    const id = /berth: sandbox (\S+)/.exec(result.stderr)?.[1];
    expect(await containerLifecycle(since, 'berth.task=shelled'), result.stderr).toEqual([
      { action: 'create', name: id },
      { action: 'destroy', name: id },
    ]);
  }, 120_000);

  it("exec: runs one command in the task's sandbox and exits with its status", async () => {
    const since = Date.now();
    const result = await berth(['exec', taskDir, '--', 'sh /solution/solve.sh && cat /app/answer.txt && ls /tests; exit 4']);
    expect(result.code, result.stderr).toBe(4);
    expect(result.stdout).toBe('42\ntest.sh\n');
    const argv = await berth(['exec', taskDir, '--json', '--', 'printf', '%s|', 'a b', 'c']);
    expect(argv.code).toBe(0);
    expect(JSON.parse(argv.stdout)).toMatchObject({ exitCode: 0, stdout: 'a b|c|', timedOut: false });
    expect(await containersLabelled('berth.task=shelled')).toEqual([]);
    // One sandbox per exec, each made with that label and removed.
    const lifecycle = await containerLifecycle(since, 'berth.task=shelled');
    expect(lifecycle.map((e) => e.action)).toEqual(['create', 'destroy', 'create', 'destroy']);
    expect(new Set(lifecycle.map((e) => e.name)).size).toBe(2);
  }, 120_000);

  it('a terminal that reports 0x0 (script, CI, some IDEs) gets the usual 24x80; /tests/test.sh is executable, as in a trial', async () => {
    const child = spawnInPty(['exec', taskDir, '--tty', '--', 'stty size; test -x /tests/test.sh && test -x /solution/solve.sh && echo both-executable'], {
      cols: 0,
      rows: 0,
    });
    const result = await collect(child, { timeoutMs: 90_000, keepStdin: true });
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toMatch(/24 80/);
    expect(result.stdout).toContain('both-executable');
    expect(result.stdout).not.toMatch(/ConfigError/);
  }, 120_000);

  it("exec: piped input is the command's stdin to its end; --tty with a pipe is refused; a failed infrastructure exits 125, never the command's 1", async () => {
    const piped = await berth(['exec', taskDir, '--', 'wc -l'], { input: 'one\ntwo\nthree\n' });
    expect(piped.code, piped.stderr).toBe(0);
    expect(piped.stdout.trim()).toBe('3');
    // Where it runs is named, namespace and all for a cluster (here the engine's address).
    expect(piped.stderr).toMatch(/starting shelled on docker \(.+\)/);

    const tty = await berth(['exec', taskDir, '--tty', '--', 'cat'], { input: 'x\n' });
    expect(tty.code).toBe(2);
    expect(tty.stderr).toMatch(/--tty with piped input: .*drop --tty/);

    // An image that cannot be pulled: the command never ran.
    await writeDataset(join(root, 'private'), [{ id: 'locked', kind: 'private' }]);
    const infra = await berth(['exec', join(root, 'private', 'locked'), '--', 'true'], { env: { DOCKER_CONFIG: join(root, 'no-docker-config') } });
    expect(infra.code, infra.stderr).toBe(125);
    expect(infra.stderr).toMatch(/berth: ImagePullError: /);
  }, 120_000);

  it('refuses a dataset directory: shell needs one task', async () => {
    const result = await berth(['shell', join(root, 'tasks')]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/holds 2 tasks; give one task directory \(the one with task.toml\), e.g. .*\/tasks\/other/);
  });
});
