// --ek mistakes stop harbor's job before any trial, in harbor's words for it: the key named.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { removeBuiltImages } from '@berth/test-support/built-images';
import { adminApi, BERTH_KUBECONFIG, NAMESPACE } from '@berth/test-support/kube-cluster';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXAMPLES, FIXTURES, harborRun, outcomes, trials, writeTask } from './support/harbor.js';

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
    [
      { backend: 'k8s', egress_proxy: false, egress_proxy_image: 'node:20' },
      /--ek egress_proxy_image is the image of berth's egress\s+proxy, which --ek egress_proxy=false turns off/,
    ],
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

describe('--ek egress_proxy and lifetime_sec', () => {
  it("egress_proxy=true: a wildcard allowlist runs on Docker, names matched at berth's proxy (a name off the list REFUSED by it); without it harbor refuses the wildcard before any trial", async () => {
    await writeTask(join(root, 'tasks-proxy'), 'wildcard', {
      image: 'berth-test/busybox:latest',
      network: 'network_mode = "allowlist"\nallowed_hosts = ["*.wild.berth-harbor.test"]',
      test: '#!/bin/sh\nmkdir -p /logs/verifier\nif nslookup -type=a off-list.berth-harbor.test 2>&1 | grep -q REFUSED; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n',
    });
    const jobs = join(root, 'jobs');
    const proxied = await harborRun(join(root, 'tasks-proxy'), jobs, 'egress-proxy', { backend: 'docker', egress_proxy: true });
    expect(outcomes(join(jobs, 'egress-proxy')), proxied.output).toEqual({ wildcard: 1 });
    const plain = await harborRun(join(root, 'tasks-proxy'), jobs, 'no-egress-proxy', { backend: 'docker' });
    // harbor's own check of what the plugin claims: the job stops before any trial.
    expect(plain.code, plain.output).toBe(1);
    expect(plain.output).toMatch(/wildcard hostnames is not/);
  }, 300_000);

  it("egress_proxy_image on Kubernetes: the same wildcard task runs, names matched at berth's egress proxy pod (of that image); no pod left", async () => {
    await writeTask(join(root, 'tasks-proxy-k8s'), 'wildcard', {
      image: 'berth-test/busybox:latest',
      network: 'network_mode = "allowlist"\nallowed_hosts = ["*.wild.berth-harbor.test"]',
      test: '#!/bin/sh\nmkdir -p /logs/verifier\nif nslookup -type=a off-list.berth-harbor.test 2>&1 | grep -q REFUSED; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n',
    });
    const jobs = join(root, 'jobs');
    const ek = { backend: 'k8s', kubeconfig: BERTH_KUBECONFIG, egress_proxy_image: 'berth-test/node:20' };
    const run = await harborRun(join(root, 'tasks-proxy-k8s'), jobs, 'egress-proxy-k8s', ek);
    expect(outcomes(join(jobs, 'egress-proxy-k8s')), run.output).toEqual({ wildcard: 1 });
    // Proxy pods whose owner (harbor's berth process) is gone: other test files' live runners may hold their own.
    const ownerGone = (pid: number) => {
      try {
        process.kill(pid, 0); // signal 0: only asks whether the process exists
        return false;
      } catch {
        return true;
      }
    };
    const pods = await adminApi().listNamespacedPod({ namespace: NAMESPACE, labelSelector: 'berth.egress-proxy=true' });
    const left = pods.items.filter((p) => !p.metadata?.deletionTimestamp && ownerGone(Number(p.metadata?.labels?.['berth.owner-pid'])));
    expect(left.map((p) => p.metadata?.name)).toEqual([]);
  }, 300_000);

  it("lifetime_sec caps each sandbox: a verifier running past it ends as berth's LifetimeExceeded (a task failure), not a hang", async () => {
    await writeTask(join(root, 'tasks-lifetime'), 'outlives', {
      image: 'berth-test/busybox:latest',
      test: '#!/bin/sh\nsleep 50\nmkdir -p /logs/verifier\necho 1 > /logs/verifier/reward.txt\n',
    });
    const jobs = join(root, 'jobs');
    const run = await harborRun(join(root, 'tasks-lifetime'), jobs, 'lifetime', { backend: 'docker', lifetime_sec: 8 });
    const [trial] = [...trials(join(jobs, 'lifetime')).values()];
    expect(trial?.exception_info?.exception_message, run.output).toMatch(/LifetimeExceeded|lifetime/);
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
