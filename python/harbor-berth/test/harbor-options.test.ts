// --ek mistakes stop harbor's job before any trial, in harbor's words for it: the key named.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { removeBuiltImages } from '@berth/test-support/built-images';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXAMPLES, FIXTURES, harborRun, outcomes, writeTask } from './support/harbor.js';

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'berth-harbor-options-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('harbor run with bad --ek values', () => {
  it.each([
    // harbor prints the error in a boxed traceback that wraps long lines: the start of each is matched.
    [{ backend: 'kubernetes' }, /--ek backend='kubernetes': choose one of docker,/],
    [{ backend: 'docker', namespace: 'evals' }, /--ek namespace is for --ek backend=k8s, not/],
    [{ backend: 'modal', egress_image: 'berth-test/egress:latest' }, /--ek egress_image is for --ek backend=docker, not/],
    [{ backend: 'k8s', pool: '-2' }, /--ek pool=-2: how many idle sandboxes/],
    [{ backend: 'k8s', network_probe: 'nowhere' }, /--ek network_probe='nowhere': host:port/],
    // A key that is no one's (a typo): harbor 0.26's check of options_model, berth's own on 0.25.
    [{ backend: 'docker', namspace: 'evals' }, /namspace/],
    [{ backend: 'docker', berth: '/no/such/berth' }, /No such file or directory: '\/no\/such\/berth'|berth process .* exited|cannot run/],
  ])(
    '%j: the job stops, naming the key',
    async (ek, said) => {
      const jobs = join(root, 'jobs');
      const name = `bad-${Object.keys(ek).join('-')}-${Math.random().toString(36).slice(2, 6)}`;
      const run = await harborRun(join(EXAMPLES, 'hello-world'), jobs, name, ek, { timeoutMs: 120_000 });
      expect(run.output).toMatch(said);
      if (!('berth' in ek)) {
        // A construction error: harbor ends the job with status 1 and no trial has a result.
        expect(run.code).toBe(1);
        const trials = (await readdir(join(jobs, name)).catch(() => [] as string[])).filter((t) => t.startsWith('hello-world'));
        for (const trial of trials) expect(await readdir(join(jobs, name, trial))).not.toContain('result.json');
      }
    },
    180_000,
  );
});

describe('an allowlist task on Docker without --ek egress_image', () => {
  it('runs: berth makes the helper image that writes its packet filter; rewarded 1', async () => {
    const run = await harborRun(FIXTURES, join(root, 'jobs'), 'allowlist-no-egress', { backend: 'docker' }, { args: ['-i', 'allowlist'], timeoutMs: 240_000 });
    expect(outcomes(join(root, 'jobs', 'allowlist-no-egress')), run.output).toEqual({ allowlist: 1 });
  }, 300_000);
});

describe('--force-build', () => {
  // The build is a cache berth keeps (README: Builds); the run's teardown fails on one left.
  afterAll(async () => {
    await removeBuiltImages([join(root, 'tasks', 'force-build', 'environment')]);
  });
  it("builds the task's environment/Dockerfile over its docker_image (harbor's rule); without it the prebuilt image runs", async () => {
    await writeTask(join(root, 'tasks'), 'force-build', {
      image: 'berth-test/busybox:latest',
      dockerfile: 'FROM berth-test/busybox:latest\nRUN echo built > /berth-built\n',
      test: '#!/bin/sh\nmkdir -p /logs/verifier\nif [ -f /berth-built ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n',
    });
    const jobs = join(root, 'jobs');
    const prebuilt = await harborRun(join(root, 'tasks'), jobs, 'prebuilt', { backend: 'docker' });
    expect(outcomes(join(jobs, 'prebuilt')), prebuilt.output).toEqual({ 'force-build': 0 });
    const built = await harborRun(join(root, 'tasks'), jobs, 'force-built', { backend: 'docker' }, { args: ['--force-build'] });
    expect(outcomes(join(jobs, 'force-built')), built.output).toEqual({ 'force-build': 1 });
  }, 300_000);
});

describe('--mounts', () => {
  it('stops the job before any trial, saying berth does not apply host mounts (rather than leaving them unused)', async () => {
    const jobs = join(root, 'jobs');
    const run = await harborRun(
      join(EXAMPLES, 'hello-world'),
      jobs,
      'mounts',
      { backend: 'docker' },
      {
        args: ['--mounts', JSON.stringify([{ type: 'bind', source: root, target: '/host-data' }])],
        timeoutMs: 120_000,
      },
    );
    expect(run.code).toBe(1);
    expect(run.output).toMatch(/--mounts \(\/host-data\) are not applied/);
  }, 180_000);
});
