import { cp, mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { berth } from './support/berth-bin.js';

const COMMANDS = ['run', 'preflight', 'shell', 'exec', 'sweep', 'report', 'census', 'regrade'];
const DATA_COMMANDS = ['run', 'preflight', 'exec', 'sweep', 'report', 'census', 'regrade'];
const repo = fileURLToPath(new URL('../../../', import.meta.url));

let scratch: string | undefined;
afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe('berth --help', () => {
  it('every command has help with an example, and --json where its output is data', async () => {
    const top = await berth(['--help']);
    expect(top.code).toBe(0);
    for (const command of COMMANDS) {
      expect(top.stdout).toContain(`${command} `);
      const help = await berth([command, '--help']);
      expect(help.code, command).toBe(0);
      expect(help.stdout, command).toMatch(/Examples?:\n {2}berth /);
      if (DATA_COMMANDS.includes(command)) expect(help.stdout, command).toContain('--json');
    }
    // sweep makes no sandbox: it offers no flag that only making one would use.
    const sweep = await berth(['sweep', '--help']);
    expect(sweep.stdout).not.toMatch(/--network-probe|--build-repository|--mirror/);
    expect(sweep.stdout).toMatch(/--namespace/);
  });

  it('says how to install a backend package that is missing', async () => {
    // An install of the CLI with only what it depends on: no @berth/backend-k8s beside it.
    scratch = await mkdtemp(join(tmpdir(), 'berth-cli-install-'));
    const modules = join(scratch, 'node_modules');
    await mkdir(join(modules, '@berth', 'cli'), { recursive: true });
    for (const part of ['package.json', 'dist', 'bin']) await cp(join(repo, 'packages/cli', part), join(modules, '@berth/cli', part), { recursive: true });
    for (const pkg of ['core', 'harbor', 'serve', 'backend-docker']) await symlink(join(repo, 'packages', pkg), join(modules, '@berth', pkg));
    await symlink(join(repo, 'node_modules', 'commander'), join(modules, 'commander'));
    const result = await berth(['sweep', '--backend', 'k8s', '--dry-run'], { bin: join(modules, '@berth/cli/bin/berth.js') });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain('the k8s backend is not installed: run `npm install @berth/backend-k8s` beside @berth/cli, then try again');
    const docker = await berth(['sweep', '--dry-run'], { bin: join(modules, '@berth/cli/bin/berth.js') });
    expect(docker.code, docker.stderr).toBe(0);
  });
});
