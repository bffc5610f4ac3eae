import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTag, hashBuildContext } from '@berth/core/backend-kit';
import type { HarborJobReport } from '@berth/harbor';
import { ADMIN_KUBECONFIG, adminApi, BERTH_KUBECONFIG, NAMESPACE, POD_BRIDGE_ADDRESS } from '@berth/test-support/kube-cluster';
import { ModalSimulator } from '@berth/test-support/modal-sim';
import { writeRegistryLogin } from '@berth/test-support/registry-login';
import { berth } from './support/berth-bin.js';
import { writeDataset } from './support/dataset.js';
import { containersLabelled } from './support/docker-state.js';

// `--backend k8s` and `--backend modal`: the same CLI, the backend loaded by package name and
// configured the way its package documents (KUBECONFIG; Modal's token variables), against the
// test cluster and the Modal simulator.
let root: string;
let dockerConfig: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'berth-cli-backends-'));
  dockerConfig = await writeRegistryLogin(join(root, 'docker-config'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function report(jobDir: string): Promise<HarborJobReport> {
  return JSON.parse(await readFile(join(jobDir, 'report.json'), 'utf8')) as HarborJobReport;
}

describe('berth preflight on Kubernetes', () => {
  it('checks a public and a no-network task on one image apart: the one the cluster cannot hold fails, the other passes', async () => {
    const tasks = await writeDataset(join(root, 'k8s-preflight'), [
      { id: 'online', kind: 'pass', network: 'public' },
      { id: 'offline', kind: 'pass' },
    ]);
    // kube-router lets every pod reach the node's node ports whatever the policy: probing one, the
    // deny-all policy is seen not to hold, as on a cluster without an enforcer.
    const probe = createServer((socket) => socket.end());
    let port = 0;
    for (let i = 0; i < 20 && port === 0; i++) {
      const p = 30000 + Math.floor(Math.random() * 2768);
      port = await new Promise<number>((resolve) => {
        probe.once('error', () => resolve(0));
        probe.listen(p, POD_BRIDGE_ADDRESS, () => resolve(p));
      });
    }
    const env = { KUBECONFIG: BERTH_KUBECONFIG, DOCKER_CONFIG: dockerConfig };
    const preflight = await berth(['preflight', tasks, '--backend', 'k8s', '--network-probe', `${POD_BRIDGE_ADDRESS}:${port}`], {
      env,
      timeoutMs: 120_000,
    }).finally(() => probe.close());
    expect(preflight.code, preflight.stdout + preflight.stderr).toBe(1);
    const row = (name: string) => preflight.stdout.split('\n').find((l) => l.includes(name) && l.includes('berth-test/busybox')) ?? '';
    expect(row('network none')).toMatch(/^FAIL .*offline/);
    expect(row('network none')).toMatch(/does not enforce NetworkPolicy/);
    // Public needs no enforcement: not failed (a WARN says only that docker.io cannot be asked from here).
    expect(row('network public')).toMatch(/^(OK|WARN) .*online/);
    expect(row('network public')).not.toMatch(/NetworkPolicy/);
  }, 150_000);
});

describe('berth run on other backends', () => {
  it('k8s: a private image pulled with the Docker config credentials, one pod per attempt, none left', async () => {
    const tasks = await writeDataset(join(root, 'k8s'), [
      { id: 'k8s-pass', kind: 'pass', image: '127.0.0.1:5000/berth/private-busybox:k8s' },
      { id: 'k8s-fail', kind: 'fail', image: '127.0.0.1:5000/berth/private-busybox:k8s' },
    ]);
    // The tasks are offline (no-network): berth proves the cluster enforces NetworkPolicy from inside
    // a pod against the API server's service (kube-proxy on the test cluster, as on a real one).
    const env = { KUBECONFIG: BERTH_KUBECONFIG, DOCKER_CONFIG: dockerConfig };
    const preflight = await berth(['preflight', tasks, '--backend', 'k8s'], { env });
    expect(preflight.code, preflight.stdout + preflight.stderr).toBe(0);
    expect(preflight.stdout).toMatch(/OK +rbac: /);

    const jobDir = join(root, 'k8s-job');
    const result = await berth(['run', tasks, '--backend', 'k8s', '--job-dir', jobDir], { env, timeoutMs: 240_000 });
    expect(result.code, result.stdout + result.stderr).toBe(0);
    const job = await report(jobDir);
    expect(job.backend).toBe('k8s');
    expect(job.tasks.map((t) => [t.taskId, t.status, t.reward])).toEqual([
      ['k8s-fail', 'rewarded', 0],
      ['k8s-pass', 'rewarded', 1],
    ]);
    // One attempt each, one pod each, both removed: as berth counted them and as the cluster saw them.
    expect(job.tasks.map((t) => t.attempts.length)).toEqual([1, 1]);
    expect(job.report.sandboxes).toEqual({ created: 2, removed: 2, notRemoved: [] });
    const podNames = await Promise.all(
      job.tasks.map(
        async (t) => (JSON.parse(await readFile(join(jobDir, t.taskId, 'attempt-1', 'result.json'), 'utf8')) as { environmentId: string }).environmentId,
      ),
    );
    expect(new Set(podNames).size).toBe(2);
    for (const name of podNames) {
      // The kubelet's events name the pod: it was made (and scheduled) under that name.
      const events = await adminApi().listNamespacedEvent({ namespace: NAMESPACE, fieldSelector: `involvedObject.kind=Pod,involvedObject.name=${name}` });
      expect(
        events.items.map((e) => e.reason),
        `events of pod ${name}`,
      ).toContain('Scheduled');
      await expect(adminApi().readNamespacedPod({ namespace: NAMESPACE, name })).rejects.toMatchObject({ code: 404 });
    }
    const pods = await adminApi().listNamespacedPod({ namespace: NAMESPACE, labelSelector: 'berth.task in (k8s-pass,k8s-fail)' });
    expect(pods.items.map((p) => p.metadata?.name)).toEqual([]);
  }, 300_000);

  it('k8s configured as kubectl users write it (--kubeconfig, -n) and --build-repository; examples/tasks/count-lines runs there unchanged', async () => {
    const examples = join(import.meta.dirname, '..', '..', '..', 'examples', 'tasks');
    const env = { DOCKER_CONFIG: dockerConfig, KUBECONFIG: '' };
    // The admin kubeconfig names no namespace: -n puts the pods where berth's Role is.
    const k8s = ['--backend', 'k8s', '--kubeconfig', ADMIN_KUBECONFIG, '-n', NAMESPACE];
    const portable = await berth(['run', examples, '--filter', 'count-lines', ...k8s, '--job-dir', join(root, 'count-job')], { env, timeoutMs: 240_000 });
    expect(portable.code, portable.stdout + portable.stderr).toBe(0);
    expect(portable.stdout).toMatch(/on k8s \(https:\/\/127\.0\.0\.1:6443 namespace berth-test\)/);
    expect((await report(join(root, 'count-job'))).tasks.map((t) => [t.taskId, t.reward])).toEqual([['count-lines', 1]]);
    // --snapshot-setup where the backend cannot snapshot: refused with the flag and the backend's hint, before any task.
    const snap = await berth(['run', examples, '--filter', 'count-lines', ...k8s, '--snapshot-setup', 'true', '--job-dir', join(root, 'snap-refused')], {
      env,
    });
    expect(snap.code, snap.stdout + snap.stderr).toBe(2);
    expect(snap.stderr).toMatch(/--snapshot-setup needs a backend that can snapshot a sandbox; --backend k8s cannot \(Kubernetes' API cannot save/);
    expect(snap.stdout).not.toMatch(/count-lines {2}/);

    // A task built from its Dockerfile: without a builder the line says which flag to give.
    const built = await writeDataset(join(root, 'k8s-built'), [{ id: 'k8s-built', kind: 'pass' }]);
    const toml = join(built, 'k8s-built', 'task.toml');
    await writeFile(toml, (await readFile(toml, 'utf8')).replace(/docker_image = .*\n/, '').replace('network_mode = "no-network"\n', ''));
    await mkdir(join(built, 'k8s-built', 'environment'), { recursive: true });
    await writeFile(
      join(built, 'k8s-built', 'environment', 'Dockerfile'),
      'FROM 127.0.0.1:5000/berth/private-busybox:k8s\nRUN mkdir -p /app && echo built > /app/built.txt\n',
    );
    const refused = await berth(['run', built, ...k8s, '--job-dir', join(root, 'built-refused')], { env, timeoutMs: 120_000 });
    expect(refused.code, refused.stdout + refused.stderr).toBe(1);
    expect(refused.stdout).toMatch(/k8s-built {2}infra_failed: permanent_infra CapabilityError: .*give --build-repository <registry\/repo>/);
    const ok = await berth(['run', built, ...k8s, '--build-repository', '127.0.0.1:5000/berth/cli-builds', '--job-dir', join(root, 'built-ok')], {
      env,
      timeoutMs: 240_000,
    });
    // The local engine's copy of the build (the pushed one stays in the test registry, tagged by its content).
    const tag = buildTag(await hashBuildContext({ context: join(built, 'k8s-built', 'environment'), dockerfile: 'Dockerfile', args: {}, network: 'public' }));
    await new Docker()
      .getImage(tag)
      .remove({ force: true })
      .catch(() => undefined);
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);
    expect((await report(join(root, 'built-ok'))).tasks.map((t) => [t.taskId, t.reward])).toEqual([['k8s-built', 1]]);

    const misplaced = await berth(['run', built, '-n', NAMESPACE, '--job-dir', join(root, 'misplaced')]);
    expect(misplaced.code).toBe(2);
    expect(misplaced.stderr).toMatch(/--namespace is for --backend k8s, not --backend docker/);
    const badProbe = await berth(['run', built, ...k8s, '--network-probe', 'nowhere', '--job-dir', join(root, 'bad-probe')], { env });
    expect(badProbe.code).toBe(2);
    expect(badProbe.stderr).toMatch(/--network-probe wants host:port \(e\.g\. 10\.0\.0\.1:443\), got "nowhere"/);
  }, 400_000);

  it('k8s with no kubeconfig anywhere: run stops before any task (exit 2), preflight fails its kubeconfig check, both saying what to set', async () => {
    const examples = join(import.meta.dirname, '..', '..', '..', 'examples', 'tasks');
    const home = join(root, 'no-home');
    await mkdir(home, { recursive: true });
    const env = { HOME: home, KUBECONFIG: '', KUBERNETES_SERVICE_HOST: '', KUBERNETES_SERVICE_PORT: '' };
    const run = await berth(['run', examples, '--filter', 'count-lines', '--backend', 'k8s', '--job-dir', join(root, 'no-kube-job')], { env });
    expect(run.code, run.stdout + run.stderr).toBe(2);
    expect(run.stderr).toMatch(
      /ConfigError: no kubeconfig found: KUBECONFIG is not set, .*no-home\/\.kube\/config does not exist.*; give --kubeconfig <file>, set KUBECONFIG, or create ~\/\.kube\/config/,
    );
    expect(run.stdout + run.stderr).not.toMatch(/HTTP protocol is not allowed/);
    const preflight = await berth(['preflight', examples, '--filter', 'count-lines', '--backend', 'k8s'], { env });
    expect(preflight.code).toBe(1);
    expect(preflight.stdout).toMatch(/FAIL +kubeconfig: no kubeconfig found: .*give --kubeconfig <file>/);
  });

  it('modal: through the simulator, configured by MODAL_SERVER_URL / MODAL_TOKEN_ID / MODAL_TOKEN_SECRET', async () => {
    const sim = await ModalSimulator.start();
    try {
      const caFile = join(root, 'modal-ca.pem');
      await writeFile(caFile, sim.ca);
      const tasks = await writeDataset(join(root, 'modal'), [
        { id: 'modal-pass', kind: 'pass' },
        { id: 'modal-no-reward', kind: 'no-reward' },
      ]);
      const env = {
        MODAL_SERVER_URL: sim.url,
        MODAL_TOKEN_ID: sim.tokenId,
        MODAL_TOKEN_SECRET: sim.tokenSecret,
        // The simulator's TLS is signed by a CA made for the test; Node trusts it through this.
        NODE_EXTRA_CA_CERTS: caFile,
        HOME: root,
      };
      const jobDir = join(root, 'modal-job');
      const result = await berth(['run', tasks, '--backend', 'modal', '--job-dir', jobDir], { env, timeoutMs: 240_000 });
      expect(result.code, result.stdout + result.stderr).toBe(0);
      expect(result.stdout + result.stderr).not.toContain(sim.tokenSecret);
      const job = await report(jobDir);
      expect(job.backend).toBe('modal');
      expect(job.tasks.map((t) => [t.taskId, t.status, t.failureType ?? t.reward])).toEqual([
        ['modal-no-reward', 'task_failed', 'RewardFileMissing'],
        ['modal-pass', 'rewarded', 1],
      ]);
      expect(await containersLabelled('berth.modal-sim', 'modal.tag.berth.task=modal-pass')).toEqual([]);
    } finally {
      await sim.close();
    }
  }, 300_000);
});
