import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { berth } from './support/berth-bin.js';
import { PRIVATE_TAGS, writeDataset } from './support/dataset.js';

// A job with known truth, made by the real CLI on the real engine:
// - 3 tasks whose private images (three tags) cannot be pulled anonymously: one problem;
// - 2 tasks whose verifier writes no reward: another;
// - 3 "fake zeros" (the output says PASSED, the reward file says 0), 2 honest passes, 1 honest fail.
let root: string;
let jobDir: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'berth-cli-census-'));
  const tasks = await writeDataset(join(root, 'tasks'), [
    // One task is called "private": its id must not be replaced inside the image name private-busybox.
    ...PRIVATE_TAGS.map((tag, i) => ({
      id: i === 0 ? 'private' : `private-${i}`,
      kind: 'private' as const,
      image: `127.0.0.1:5000/berth/private-busybox:${tag}`,
    })),
    { id: 'no-reward-1', kind: 'no-reward' },
    { id: 'no-reward-2', kind: 'no-reward' },
    { id: 'fake-1', kind: 'fake-zero' },
    { id: 'fake-2', kind: 'fake-zero' },
    { id: 'fake-3', kind: 'fake-zero' },
    { id: 'pass-1', kind: 'pass' },
    { id: 'pass-2', kind: 'pass' },
    { id: 'honest-fail', kind: 'fail' },
  ]);
  jobDir = join(root, 'job');
  const run = await berth(['run', tasks, '--job-dir', jobDir, '--concurrency', '4', '--attempts', '2'], { env: { DOCKER_CONFIG: join(root, 'none') } });
  expect(run.code, run.stderr + run.stdout).toBe(1);
}, 180_000);
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('berth census', () => {
  it('groups the failed attempts into the problems they are', async () => {
    const result = await berth(['census', jobDir, '--json']);
    expect(result.code, result.stderr).toBe(0);
    const census = JSON.parse(result.stdout) as {
      failedAttempts: number;
      groups: Array<{ category: string; type: string; pattern: string; attempts: number; tasks: number; finalFor: number; exampleTasks: string[] }>;
    };
    expect(census.failedAttempts).toBe(5);
    expect(census.groups.map((g) => [g.category, g.type, g.tasks, g.attempts, g.finalFor])).toEqual([
      ['permanent_infra', 'ImagePullError', 3, 3, 3],
      ['task_failure', 'RewardFileMissing', 2, 2, 2],
    ]);
    expect(census.groups[0]!.pattern).toContain('<image>');
    expect(census.groups[0]!.pattern).not.toContain('cli-2');

    const text = await berth(['census', jobDir]);
    expect(text.stdout).toMatch(/^2 problem\(s\) among 5 failed attempt\(s\) of 5 task\(s\) \(11 tasks in the run\)/);
    expect(text.stdout).toMatch(/3 {2}permanent_infra {2}ImagePullError {2}\(3 task\(s\), final for 3\)/);
    // The advice in the CLI's words, as the run printed it: a flag or the Docker config, not a library option.
    expect(text.stdout).toMatch(/log in with docker login/);
    expect(text.stdout).not.toMatch(/spec\.image\.auth|options\./);
  });
});

describe('berth regrade', () => {
  it("re-reads harbor's reward files by default: every graded attempt agrees", async () => {
    const result = await berth(['regrade', jobDir, '--json']);
    expect(result.code, result.stderr + result.stdout).toBe(0);
    const data = JSON.parse(result.stdout) as { graded: number; skipped: number; agreed: number; agreement: number };
    // 8 attempts reached the verifier; the 3 refused pulls have nothing to grade.
    expect(data).toMatchObject({ graded: 8, skipped: 3, agreed: 8, agreement: 1 });
  });

  it('with a reward parser over the archived test output, finds exactly the fake zeros', async () => {
    const parser = 'grep -q PASSED && echo 1 || echo 0';
    const result = await berth(['regrade', jobDir, '--reward-parser', parser, '--json']);
    expect(result.code).toBe(1);
    const data = JSON.parse(result.stdout) as {
      graded: number;
      agreed: number;
      agreement: number;
      disagreements: Array<{ taskId: string; recorded: number; regraded: number; kind: string }>;
      mean: { recorded: number; regraded: number; over: number };
    };
    expect(data.graded).toBe(8);
    expect(data.agreed).toBe(5);
    expect(data.agreement).toBeCloseTo(5 / 8);
    expect(data.disagreements.map((d) => [d.taskId, d.recorded, d.regraded, d.kind]).sort()).toEqual([
      ['fake-1', 0, 1, 'fake zero'],
      ['fake-2', 0, 1, 'fake zero'],
      ['fake-3', 0, 1, 'fake zero'],
    ]);
    // Over the 8 scored tasks' chosen attempts: 2 passes recorded, 5 after regrading.
    expect(data.mean).toEqual({ recorded: 2 / 8, over: 8, regraded: 5 / 8, regradedOver: 8 });

    const text = await berth(['regrade', jobDir, '--reward-parser', parser]);
    expect(text.stdout).toContain('agreement 62.5 % (5/8); 3 disagreement(s), 0 parser error(s)');
    expect(text.stdout).toMatch(/fake-2 +1 \(chosen\) +0 +1 +fake zero/);
  });

  it('says so when the parser fails, per attempt', async () => {
    const result = await berth(['regrade', jobDir, '--reward-parser', 'echo not-a-number']);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('8 parser error(s)');
    // Nothing graded is not 100 % agreement.
    expect(result.stdout).toContain('agreement n/a: no attempt could be regraded (the parser failed on all 8; the first error is below)');
    expect(result.stdout).not.toMatch(/100\.0 %/);
    expect(result.stdout).toMatch(/error pass-1 attempt 1: the reward parser printed "not-a-number", not a number/);
    // No recorded value stands in for a regraded one: no regraded mean at all.
    expect(result.stdout).toContain('mean reward over 8 chosen attempt(s): recorded 0.250; regraded n/a (none of them could be regraded)');
    expect(result.stdout).not.toMatch(/regraded \d\.\d{3}/);
  });
});
