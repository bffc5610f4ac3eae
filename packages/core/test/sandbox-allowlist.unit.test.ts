import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BackendUnavailableError, ConfigError } from '../src/errors.js';
import type { NetworkNotice } from '../src/contract.js';
import { type AllowlistEngine, SandboxAllowlist } from '../src/kit/index.js';

// The sandbox is this machine: its "/etc/hosts" a temporary file the real hosts command rewrites
// under the machine's /bin/sh; what the engine lets out is recorded.
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function sandbox(opts: { code?: number | null } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'berth-allowlist-'));
  dirs.push(dir);
  const hosts = join(dir, 'hosts');
  writeFileSync(hosts, '127.0.0.1\tlocalhost\n');
  const engine: AllowlistEngine = {
    backend: 'local',
    factory: 'createLocalBackend',
    engine: 'Local',
    environmentId: 'env-1',
    owner: "the sandbox's",
    hostsNeed: '/bin/sh in the image',
    run: (argv) =>
      new Promise((resolve) => {
        if (opts.code !== undefined) return resolve({ code: opts.code, output: 'sh: cannot create /etc/hosts: Read-only file system\n' });
        const args = argv.slice(1).map((a) => (a === '/etc/hosts' ? hosts : a));
        execFile(argv[0]!, args, (error, stdout, stderr) => resolve({ code: error ? Number(error.code) : 0, output: stdout + stderr }));
      }),
  };
  const allowed: string[][] = [];
  const allow = async (blocks: readonly string[]) => {
    allowed.push([...blocks]);
  };
  return { engine, hosts: () => readFileSync(hosts, 'utf8'), allowed, allow };
}

describe('SandboxAllowlist (kit)', () => {
  it('apply lets the blocks out, then opened(), then writes the names; open removes only its lines, once', async () => {
    const s = sandbox();
    const table: Record<string, string[]> = { 'db.test': ['10.0.0.7'] };
    const list = new SandboxAllowlist(s.engine, { resolveHost: async (n) => table[n] ?? [], refreshNamesMs: 0 });
    const allowlist = { allow: ['db.test', '10.9.0.0/16'] };
    const resolved = await list.resolve(allowlist);
    const order: string[] = [];
    await list.apply(
      allowlist,
      resolved,
      async (b) => {
        order.push('allow');
        await s.allow(b);
      },
      { opened: async () => void order.push(`opened, hosts then: ${s.hosts().includes('db.test')}`) },
    );
    expect(order).toEqual(['allow', 'opened, hosts then: false']);
    expect(s.allowed).toEqual([['10.0.0.7/32', '10.9.0.0/16']]);
    expect(s.hosts()).toBe('127.0.0.1\tlocalhost\n10.0.0.7 db.test # berth-allowlist\n');
    const run = vi.spyOn(s.engine, 'run');
    await list.open();
    expect(s.hosts()).toBe('127.0.0.1\tlocalhost\n');
    await list.open();
    expect(run).toHaveBeenCalledTimes(1);
  });

  it('names that move while the sandbox lives are let out and written again, and said (options.refreshNamesMs)', async () => {
    const s = sandbox();
    const table: Record<string, string[]> = { 'db.test': ['10.0.0.7'] };
    const list = new SandboxAllowlist(s.engine, { resolveHost: async (n) => table[n] ?? [], refreshNamesMs: 100 });
    const notices: NetworkNotice[] = [];
    list.bind((n) => notices.push(n));
    const allowlist = { allow: ['db.test'] };
    await list.apply(allowlist, await list.resolve(allowlist), s.allow);
    table['db.test'] = ['10.0.0.8'];
    await vi.waitFor(() => expect(notices).toEqual([{ kind: 'refreshed', hosts: [{ name: 'db.test', addresses: ['10.0.0.8'] }] }]), { timeout: 3_000 });
    expect(s.allowed).toEqual([['10.0.0.7/32'], ['10.0.0.8/32']]);
    expect(s.hosts()).toBe('127.0.0.1\tlocalhost\n10.0.0.8 db.test # berth-allowlist\n');
    await list.stop();
    table['db.test'] = ['10.0.0.9'];
    await new Promise((r) => setTimeout(r, 300));
    expect(s.allowed).toHaveLength(2);
  });

  it('a hosts write that fails is a ConfigError saying what names need; one cut off is transient; neither leaves a refresh running', async () => {
    for (const [code, error] of [
      [2, ConfigError],
      [null, BackendUnavailableError],
    ] as const) {
      const s = sandbox({ code });
      const list = new SandboxAllowlist(s.engine, { resolveHost: async () => ['10.0.0.7'], refreshNamesMs: 100 });
      const allowlist = { allow: ['db.test'] };
      const failed = await list.apply(allowlist, await list.resolve(allowlist), s.allow).catch((e: unknown) => e);
      expect(error.isInstance(failed), String(failed)).toBe(true);
      expect(String(failed)).toMatch(
        code === null
          ? /without an exit status/
          : /could not be written into the sandbox's \/etc\/hosts \(\/bin\/sh exited 2: sh: cannot create .*names need \/bin\/sh in the image; list addresses or ranges instead/,
      );
      await new Promise((r) => setTimeout(r, 250));
      expect(s.allowed).toHaveLength(1);
    }
  });
});
