// A run whose tasks use a private image, on the Modal simulator (field report 004 in ../shared/seeds/).
// Without a secret, every task ends as one permanent, clearly named ImagePullError (no retries, no
// "failed to add tests directory"), and preflight says so before the run. With the secret, every
// task scores.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runTrials, type ImageAuth } from '@berth/core';
import { createModalBackend } from '@berth/backend-modal';
import { ModalSimulator } from '@berth/test-support/modal-sim';

const TASKS = Array.from({ length: 50 }, (_, i) => `task-${String(i).padStart(2, '0')}`);
const PRIVATE = '127.0.0.1:5000/berth/private-busybox:latest';
const sim = await ModalSimulator.start();
sim.addSecret('registry-pull', { REGISTRY_USERNAME: 'berth', REGISTRY_PASSWORD: 'berth-test-secret' });
const backend = createModalBackend(sim.clientOptions());
const dir = await mkdtemp(join(tmpdir(), 'berth-seed-004-'));
await writeFile(join(dir, 'test.sh'), 'echo 1 > /tmp/reward.txt\n');
afterAll(async () => {
  await backend.close();
  await sim.close();
  await rm(dir, { recursive: true, force: true });
});

function run(auth: ImageAuth | undefined) {
  return runTrials(
    TASKS,
    async (_task, { signal }) => {
      await using env = await backend.start({ image: auth ? { ref: PRIVATE, auth } : PRIVATE }, { signal });
      await env.uploadDir(dir, '/tests', { signal });
      await env.exec('sh /tests/test.sh', { signal });
      const reward = await env.exec('cat /tmp/reward.txt', { signal });
      return { reward: Number(reward.stdout.trim()) };
    },
    { concurrency: 10, maxAttempts: 3, backoff: { initialMs: 50, maxMs: 200 } },
  );
}

describe('a run of tasks on a private image, on the Modal simulator', () => {
  it('without a secret: preflight fails on the image, and every task is one permanent ImagePullError naming it, never retried', async () => {
    const preflight = await backend.preflight({ image: PRIVATE });
    expect(preflight.ok).toBe(false);
    expect(preflight.checks.find((c) => c.name === 'image')).toMatchObject({
      status: 'fail',
      error: { type: 'ImagePullError', details: { reason: 'unauthorized' } },
    });

    const { report, tasks } = await run(undefined);
    expect(report).toMatchObject({ total: 50, scored: 0, valid: false });
    expect(report.infraFailed).toMatchObject({ total: 50, permanent: 50, transient: 0, unclassified: 0 });
    expect(report.byType).toEqual({ ImagePullError: 50 });
    for (const task of tasks) {
      expect(task.attempts).toHaveLength(1);
      expect(task.failure).toMatchObject({ category: 'permanent_infra', type: 'ImagePullError' });
      expect(task.failure?.error.message).toContain(PRIVATE);
      expect(task.failure?.error.message).toMatch(/unauthorized|authentication required/);
    }
    expect(report.invalidReasons.join(' ')).toMatch(/permanent/);
  });

  it('with the named Modal secret: preflight passes and every task scores', async () => {
    const preflight = await backend.preflight({ image: { ref: PRIVATE, auth: { secretName: 'registry-pull' } } });
    expect(preflight.ok, JSON.stringify(preflight.checks)).toBe(true);
    const { report } = await run({ secretName: 'registry-pull' });
    expect(report).toMatchObject({ total: 50, scored: 50, valid: true });
    expect(report.score?.mean).toBe(1);
    expect(await sim.sandboxes()).toEqual([]);
  });
});
