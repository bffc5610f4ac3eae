import { chmod, cp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadHarborTask } from '@berth/harbor';
import { tempDir, writeTask } from './support.js';

const dirs: string[] = [];
afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

async function twoCopies(): Promise<[string, string]> {
  const root = await tempDir('hash');
  dirs.push(root);
  const a = await writeTask(join(root, 'one'), 'same-task');
  const b = join(root, 'two', 'same-task');
  await cp(a, b, { recursive: true });
  return [a, b];
}

const hashOf = async (dir: string) => (await loadHarborTask(dir)).contentHash;

describe("a task's content hash", () => {
  it('is the same for the same files wherever they are, and changes with any edit that changes what runs', async () => {
    const [a, b] = await twoCopies();
    expect(await hashOf(a)).toBe(await hashOf(b));
    const base = await hashOf(b);

    await writeFile(join(b, 'solution', 'solve.sh'), '#!/bin/sh\necho wrong > /app/done\n');
    const edited = await hashOf(b);
    expect(edited).not.toBe(base);

    await chmod(join(b, 'solution', 'solve.sh'), 0o644);
    const notExecutable = await hashOf(b);
    expect(notExecutable).not.toBe(edited);

    await rename(join(b, 'solution', 'solve.sh'), join(b, 'solution', 'solve2.sh'));
    await writeFile(join(b, 'solution', 'solve.sh'), '#!/bin/sh\n');
    const renamed = await hashOf(b);
    expect(renamed).not.toBe(notExecutable);

    await writeFile(join(b, 'task.toml'), `${await readFile(join(a, 'task.toml'), 'utf8')}\n# a comment\n`);
    expect(await hashOf(b)).not.toBe(renamed);
  });
});
