// `[[verifier.collect]]` as loadHarborTask reads it: harbor's fields and defaults, and a clear
// ConfigError naming the entry and field for each bad one. (Runs on engines: verifier-collect.test.ts.)
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '@berth/core';
import { loadHarborTask } from '@berth/harbor';
import { tempDir, writeTask } from './support.js';

const roots: string[] = [];
afterAll(() => Promise.all(roots.map((d) => rm(d, { recursive: true, force: true }))));

async function load(collect: string) {
  const root = await tempDir('collect-load');
  roots.push(root);
  const dir = await writeTask(root, 'task', { toml: `[environment]\ndocker_image = "x"\n${collect}` });
  return { dir, loading: loadHarborTask(dir) };
}

describe('[[verifier.collect]] in task.toml', () => {
  it("reads each entry in order with harbor's defaults (timeout 60 s, the image's user, service main)", async () => {
    const { loading } = await load(
      `[[verifier.collect]]\ncommand = "git diff > /logs/artifacts/model.patch"\ntimeout_sec = 300.0\n` +
        `[[verifier.collect]]\ncommand = "pg_dump db > /logs/artifacts/db.sql"\nuser = "postgres"\nservice = "main"\n` +
        `[[verifier.collect]]\ncommand = "true"\nuser = 1000\n`,
    );
    const task = await loading;
    expect(task.verifierCollect).toEqual([
      { command: 'git diff > /logs/artifacts/model.patch', timeoutSec: 300 },
      { command: 'pg_dump db > /logs/artifacts/db.sql', timeoutSec: 60, user: 'postgres' },
      { command: 'true', timeoutSec: 60, user: '1000' },
    ]);
    expect(task.notes).toEqual([]);
  });

  it('an empty list, or none, is no collect step', async () => {
    expect((await (await load('[verifier]\ncollect = []\n')).loading).verifierCollect).toBeUndefined();
    expect((await (await load('')).loading).verifierCollect).toBeUndefined();
  });

  it('an unknown key is noted, with the field it probably meant', async () => {
    const task = await (await load(`[[verifier.collect]]\ncommand = "true"\ntimeout_secs = 5\n`)).loading;
    expect(task.verifierCollect).toEqual([{ command: 'true', timeoutSec: 60 }]);
    expect(task.notes).toEqual([
      'verifier.collect[0].timeout_secs is not a harbor task.toml field: ignored (harbor ignores it too); did you mean verifier.collect[0].timeout_sec?',
    ]);
  });

  it.each([
    ['[[verifier.collect]]\ntimeout_sec = 5\n', 'verifier.collect[0].command', /must be a non-empty string, got undefined/],
    ['[[verifier.collect]]\ncommand = ""\n', 'verifier.collect[0].command', /non-empty string/],
    ['[[verifier.collect]]\ncommand = ["ls"]\n', 'verifier.collect[0].command', /non-empty string, got an array/],
    [
      '[[verifier.collect]]\ncommand = "true"\n[[verifier.collect]]\ncommand = "ls"\ntimeout_sec = 0\n',
      'verifier.collect[1].timeout_sec',
      /positive number, got 0/,
    ],
    ['[[verifier.collect]]\ncommand = "true"\ntimeout_sec = "60"\n', 'verifier.collect[0].timeout_sec', /positive number, got "60"/],
    ['[[verifier.collect]]\ncommand = "true"\nuser = -1\n', 'verifier.collect[0].user', /a user name or a uid/],
    ['[verifier]\ncollect = "git diff"\n', 'verifier.collect', /must be an array of tables \(\[\[verifier.collect\]\]\), got "git diff"/],
    ['[verifier]\ncollect = ["git diff"]\n', 'verifier.collect[0]', /must be a table \{ command, timeout_sec\?, user\?, service\? \}/],
    ['[[verifier.collect]]\ncommand = "pg_dump"\nservice = "db"\n', 'verifier.collect[0].service', /compose service "db": berth runs one sandbox/],
  ])('refuses %j, naming %s', async (collect, path, message) => {
    const { dir, loading } = await load(collect);
    const error = await loading.catch((e: unknown) => e);
    expect(ConfigError.isInstance(error), String(error)).toBe(true);
    expect((error as ConfigError).path).toBe(path);
    expect((error as Error).message).toContain(join(dir, 'task.toml'));
    expect((error as Error).message).toMatch(message);
  });
});
