import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HOSTS_MARK, hostsFileCommand, resolveAllowlist } from '../src/kit/index.js';

// The command runs here under the machine's own /bin/sh (dash on Debian; sandboxes have busybox
// ash or bash), on a temporary file standing in for a sandbox's /etc/hosts.
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function hostsFile(content: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'berth-hosts-'));
  dirs.push(dir);
  const file = join(dir, 'hosts');
  writeFileSync(file, content);
  return file;
}
function run(argv: string[]): void {
  execFileSync(argv[0]!, argv.slice(1));
}

describe('hostsFileCommand', () => {
  const engineWritten = '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost\n172.17.0.2\tabc123\n';

  it("appends the allowlist's names, each address a line of its own, keeping the file's inode", () => {
    const file = hostsFile(engineWritten);
    const inode = statSync(file).ino;
    run(
      hostsFileCommand(
        [
          { name: 'api.example.test', addresses: ['10.0.0.7', '10.0.0.8'] },
          { name: 'b.test', addresses: ['10.0.0.9'] },
        ],
        file,
      ),
    );
    expect(readFileSync(file, 'utf8')).toBe(
      `${engineWritten}10.0.0.7 api.example.test ${HOSTS_MARK}\n10.0.0.8 api.example.test ${HOSTS_MARK}\n10.0.0.9 b.test ${HOSTS_MARK}\n`,
    );
    // Engines bind-mount the file: a rename would leave the sandbox seeing the old one.
    expect(statSync(file).ino).toBe(inode);
  });

  it("replaces berth's earlier lines only, and with no hosts removes them", () => {
    const file = hostsFile(engineWritten);
    run(hostsFileCommand([{ name: 'old.test', addresses: ['10.0.0.1'] }], file));
    writeFileSync(file, `${readFileSync(file, 'utf8')}10.9.9.9 added-later\n`);
    run(hostsFileCommand([{ name: 'new.test', addresses: ['10.0.0.2'] }], file));
    expect(readFileSync(file, 'utf8')).toBe(`${engineWritten}10.9.9.9 added-later\n10.0.0.2 new.test ${HOSTS_MARK}\n`);
    run(hostsFileCommand([], file));
    expect(readFileSync(file, 'utf8')).toBe(`${engineWritten}10.9.9.9 added-later\n`);
  });

  it('keeps a last line that has no newline', () => {
    const file = hostsFile('127.0.0.1 localhost');
    run(hostsFileCommand([{ name: 'a.test', addresses: ['10.0.0.3'] }], file));
    expect(readFileSync(file, 'utf8')).toBe(`127.0.0.1 localhost\n10.0.0.3 a.test ${HOSTS_MARK}\n`);
  });
});

describe('resolveAllowlist', () => {
  const ctx = { backend: 'test', environmentId: 'e1', engine: 'Test' };

  it('gives the blocks and the names with their addresses, once each', async () => {
    const resolved = await resolveAllowlist({ allow: ['10.1.0.0/16', '10.2.0.5', 'a.test'] }, async () => ['10.3.0.1', '10.3.0.1', '10.3.0.2'], ctx);
    expect(resolved).toEqual({
      blocks: ['10.1.0.0/16', '10.2.0.5/32', '10.3.0.1/32', '10.3.0.2/32'],
      hosts: [{ name: 'a.test', addresses: ['10.3.0.1', '10.3.0.2'] }],
    });
  });

  it('refuses what a resolveHost gives that is not an IPv4 address, naming the option', async () => {
    await expect(resolveAllowlist({ allow: ['a.test'] }, async () => ['10.0.0.1; reboot'], ctx)).rejects.toMatchObject({
      name: 'ConfigError',
      path: 'options.resolveHost',
      message: expect.stringContaining('"10.0.0.1; reboot", which is not an IPv4 address'),
    });
  });
});
