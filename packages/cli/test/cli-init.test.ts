import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadHarborTask } from '@berth/harbor';
import { berth } from './support/berth-bin.js';

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'berth-cli-init-'));
});
afterAll(async () => rm(root, { recursive: true, force: true }));

describe('berth init', () => {
  it('writes a task that runs at once: the oracle scores 1, doing nothing scores 0', async () => {
    const dir = join(root, 'my-task');
    const made = await berth(['init', dir, '--image', 'berth-test/busybox:latest']);
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).toContain(`berth run ${dir}`);
    const task = await loadHarborTask(dir);
    expect(task.notes).toEqual([]);
    expect((await stat(join(dir, 'tests', 'test.sh'))).mode & 0o111).not.toBe(0);
    expect(await readFile(join(dir, 'instruction.md'), 'utf8')).toContain('hello from my-task');

    const solved = await berth(['run', dir, '--job-dir', join(root, 'job'), '--json']);
    expect(solved.code, solved.stderr).toBe(0);
    expect(JSON.parse(solved.stdout).report.score.mean).toBe(1);
    const idle = await berth(['run', dir, '--agent', 'none', '--job-dir', join(root, 'job-none'), '--json']);
    expect(idle.code, idle.stderr).toBe(0);
    expect(JSON.parse(idle.stdout).report.score.mean).toBe(0);
  });

  it("quotes a path with spaces in its hints, and its test.sh says reward.json's rule as berth applies it", async () => {
    const dir = join(root, "a task's dir");
    const made = await berth(['init', dir, '--image', 'berth-test/busybox:latest']);
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).toContain(`berth run '${join(root, "a task'\\''s dir")}'`);
    const testSh = await readFile(join(dir, 'tests', 'test.sh'), 'utf8');
    expect(testSh).toContain('{"reward": 0.75, "passed": 3}');
    expect(testSh).toMatch(/Several fields and no "reward" score nothing/);
    expect(await readFile(join(dir, 'task.toml'), 'utf8')).not.toMatch(/not on Kubernetes/);
  });

  it('never overwrites: a directory with files in it is refused', async () => {
    const again = await berth(['init', join(root, 'my-task')]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/is not empty: give a new directory \(berth init never overwrites files\)/);
  });
});
