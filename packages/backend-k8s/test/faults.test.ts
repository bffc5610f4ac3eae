// Failures made the way they happen on a cluster, against the test cluster: a taint nobody
// tolerates, a pull Secret the kubelet could not read, an eviction, the container killed through the runtime, a pod past its lifetime.
import { afterAll, describe, expect, it } from 'vitest';
import { execInFlight } from '@berth/conformance';
import { SandboxLostError, StartupTimeoutError, TaskFailure, classifyFailure, type Environment } from '@berth/core';
import { createK8sBackend } from '@berth/backend-k8s';
import { ADMIN_KUBECONFIG, BERTH_KUBECONFIG, FAULT_TAINT, NAMESPACE, TOLERATE_FAULT, adminApi, ctr, run } from '@berth/test-support/kube-cluster';

const envs: Environment[] = [];
afterAll(() => Promise.all(envs.map((e) => e.teardown())));
const backend = () => createK8sBackend({ kubeconfig: { file: BERTH_KUBECONFIG }, tolerations: TOLERATE_FAULT });
const SPEC = { image: 'berth-test/busybox:latest', network: 'public' as const };
const PRIVATE = '127.0.0.1:5000/berth/private-busybox:k8s';

async function podEvents(name: string) {
  return (await adminApi().listNamespacedEvent({ namespace: NAMESPACE, fieldSelector: `involvedObject.name=${name}` })).items;
}

function failure(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => {
      throw new Error('expected a failure');
    },
    (e: unknown) => e,
  );
}

async function started(): Promise<Environment> {
  const env = await backend().start(SPEC);
  envs.push(env);
  return env;
}

describe('k8s faults on a real cluster', () => {
  it('a taint the pod does not tolerate: StartupTimeoutError naming it, and the pod removed', async () => {
    const taint = `${FAULT_TAINT.key}=${FAULT_TAINT.value}:${FAULT_TAINT.effect}`;
    await run('kubectl', ['--kubeconfig', ADMIN_KUBECONFIG, 'taint', 'nodes', 'berth-node', taint, '--overwrite']);
    try {
      const env = createK8sBackend({ kubeconfig: { file: BERTH_KUBECONFIG } }).environment({ ...SPEC, timeouts: { startupMs: 4000 } });
      envs.push(env);
      const error = await failure(env.start());
      expect(StartupTimeoutError.isInstance(error), String(error)).toBe(true);
      expect((error as StartupTimeoutError).lastStatus).toMatch(/Unschedulable.*untolerated taint/);
      expect(classifyFailure(error).category).toBe('transient_infra');
      await env.teardown();
      await expect(adminApi().readNamespacedPod({ name: env.id, namespace: NAMESPACE })).rejects.toMatchObject({ code: 404 });

      // Preflight says so before a run: with the node reader's rights, the taint by name...
      const admin = createK8sBackend({ kubeconfig: { file: ADMIN_KUBECONFIG }, namespace: NAMESPACE });
      const nodes = (await admin.preflight(SPEC)).checks.find((c) => c.name === 'nodes');
      expect(nodes).toMatchObject({ status: 'fail', message: expect.stringMatching(/berth-node: taint berth\.test\/fault=on:NoSchedule not tolerated/) });
      const tolerating = createK8sBackend({ kubeconfig: { file: ADMIN_KUBECONFIG }, namespace: NAMESPACE, tolerations: TOLERATE_FAULT });
      expect((await tolerating.preflight(SPEC)).checks.find((c) => c.name === 'nodes')).toMatchObject({ status: 'ok' });
      // ...and as the namespaced service account (nodes are cluster-wide), a warning that it could not look.
      const namespaced = (await createK8sBackend({ kubeconfig: { file: BERTH_KUBECONFIG } }).preflight(SPEC)).checks.find((c) => c.name === 'nodes');
      expect(namespaced).toMatchObject({ status: 'warn', message: expect.stringMatching(/node-reader\.yaml/) });
    } finally {
      await run('kubectl', ['--kubeconfig', ADMIN_KUBECONFIG, 'taint', 'nodes', 'berth-node', `${FAULT_TAINT.key}-`]).catch(() => undefined);
    }
  });

  it("the kubelet pulled without berth's pull Secret (it could not read it): the start waits for its next pull instead of failing on a good credential", {
    timeout: 120_000,
  }, async () => {
    const taint = `${FAULT_TAINT.key}=${FAULT_TAINT.value}:${FAULT_TAINT.effect}`;
    // The pod waits unscheduled while its Secret is taken away; then the node takes it.
    await run('kubectl', ['--kubeconfig', ADMIN_KUBECONFIG, 'taint', 'nodes', 'berth-node', taint, '--overwrite']);
    let untainted = false;
    try {
      const env = createK8sBackend({ kubeconfig: { file: BERTH_KUBECONFIG }, pullPolicy: 'always' }).environment({
        image: { ref: PRIVATE, auth: { username: 'berth', password: 'berth-test-secret' } },
        network: 'public',
      });
      envs.push(env);
      const starting = env.start();
      let pod;
      for (let i = 0; i < 100 && !pod?.spec?.imagePullSecrets?.length; i++) {
        await new Promise((r) => setTimeout(r, 100));
        pod = await adminApi()
          .readNamespacedPod({ name: env.id, namespace: NAMESPACE })
          .catch(() => undefined);
      }
      const name = pod?.spec?.imagePullSecrets?.[0]?.name ?? '';
      expect(name).toMatch(/^berth-pull-/);
      const secret = await adminApi().readNamespacedSecret({ name, namespace: NAMESPACE });
      await adminApi().deleteNamespacedSecret({ name, namespace: NAMESPACE });
      await run('kubectl', ['--kubeconfig', ADMIN_KUBECONFIG, 'taint', 'nodes', 'berth-node', `${FAULT_TAINT.key}-`]);
      untainted = true;
      // The kubelet says it could not read the Secret, and its pull (without it) is refused.
      const said = async () => (await podEvents(env.id)).map((e) => e.reason);
      for (let i = 0; i < 200 && !(await said()).includes('FailedToRetrieveImagePullSecret'); i++) await new Promise((r) => setTimeout(r, 100));
      for (let i = 0; i < 200 && !(await said()).includes('Failed'); i++) await new Promise((r) => setTimeout(r, 100));
      expect(await said()).toEqual(expect.arrayContaining(['FailedToRetrieveImagePullSecret', 'Failed']));
      // The Secret back, as a Secret made late looks to a kubelet: its next pull succeeds.
      await adminApi().createNamespacedSecret({
        namespace: NAMESPACE,
        body: { metadata: { name, labels: secret.metadata?.labels ?? {} }, type: secret.type ?? '', data: secret.data ?? {} },
      });
      await starting;
      expect((await env.exec('echo pulled')).stdout).toBe('pulled\n');
      await env.teardown();
      await expect(adminApi().readNamespacedSecret({ name, namespace: NAMESPACE })).rejects.toMatchObject({ code: 404 });
    } finally {
      if (!untainted) await run('kubectl', ['--kubeconfig', ADMIN_KUBECONFIG, 'taint', 'nodes', 'berth-node', `${FAULT_TAINT.key}-`]).catch(() => undefined);
    }
  });

  it('an eviction through the eviction API during an exec: SandboxLostError within seconds', async () => {
    const env = await started();
    const { started: inFlight, result: running } = execInFlight(env, 'sleep 60');
    await inFlight;
    const t0 = Date.now();
    await adminApi().createNamespacedPodEviction({
      name: env.id,
      namespace: NAMESPACE,
      body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: env.id, namespace: NAMESPACE } },
    });
    const error = await failure(running);
    expect(SandboxLostError.isInstance(error), String(error)).toBe(true);
    expect(Date.now() - t0).toBeLessThan(15_000);
    expect(classifyFailure(error)).toMatchObject({ category: 'transient_infra', type: 'SandboxLostError' });
  });

  it('the container killed through the runtime: the next exec is a SandboxLostError, not an exit code', async () => {
    const env = await started();
    const pod = await adminApi().readNamespacedPod({ name: env.id, namespace: NAMESPACE });
    const id = pod.status?.containerStatuses?.[0]?.containerID?.replace(/^containerd:\/\//, '');
    expect(id).toBeTruthy();
    await ctr('tasks', 'kill', '-s', 'SIGKILL', id!);
    const deadline = Date.now() + 15_000;
    let error: unknown;
    while (Date.now() < deadline) {
      error = await env.exec('true').then(
        () => undefined,
        (e: unknown) => e,
      );
      if (error) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(SandboxLostError.isInstance(error), String(error)).toBe(true);
    expect((error as SandboxLostError).lastState).toMatch(/137|Error|Failed/);
  });

  /** The container's id in containerd, to kill it from under the pod. */
  async function containerId(env: Environment): Promise<string> {
    const pod = await adminApi().readNamespacedPod({ name: env.id, namespace: NAMESPACE });
    const id = pod.status?.containerStatuses?.[0]?.containerID?.replace(/^containerd:\/\//, '');
    expect(id).toBeTruthy();
    return id!;
  }

  it('the container killed through the runtime during an exec: SandboxLostError within seconds', async () => {
    const env = await started();
    const { started: inFlight, result: running } = execInFlight(env, 'sleep 60');
    await inFlight;
    const t0 = Date.now();
    await ctr('tasks', 'kill', '-s', 'SIGKILL', await containerId(env));
    const error = await failure(running);
    expect(SandboxLostError.isInstance(error), String(error)).toBe(true);
    expect(Date.now() - t0).toBeLessThan(15_000);
  });

  it('a container the kubelet restarted (a pod patched to restartPolicy OnFailure): SandboxLostError, its state is gone', async () => {
    const restarting = createK8sBackend({
      kubeconfig: { file: BERTH_KUBECONFIG },
      tolerations: TOLERATE_FAULT,
      patchPod: (pod) => ({ ...pod, spec: { ...pod.spec!, restartPolicy: 'OnFailure' } }),
    });
    const env = await restarting.start(SPEC);
    envs.push(env);
    await env.exec('echo state > /tmp/state');
    await ctr('tasks', 'kill', '-s', 'SIGKILL', await containerId(env));
    // The kubelet restarts it: the container runs again, fresh, under the same pod.
    const deadline = Date.now() + 20_000;
    for (;;) {
      const pod = await adminApi().readNamespacedPod({ name: env.id, namespace: NAMESPACE });
      if ((pod.status?.containerStatuses?.[0]?.restartCount ?? 0) > 0 && pod.status?.containerStatuses?.[0]?.state?.running) break;
      if (Date.now() > deadline) throw new Error('the kubelet did not restart the container');
      await new Promise((r) => setTimeout(r, 250));
    }
    // Lost, never a confusing "No such file" from the fresh container.
    const error = await failure(env.exec('cat /tmp/state'));
    expect(SandboxLostError.isInstance(error), String(error)).toBe(true);
    expect((error as SandboxLostError).lastState).toMatch(/restarted/);
  });

  it('a command past the memory limit is OOM-killed by the kernel: exit 137 as data, the sandbox lives on', async () => {
    const env = await backend().start({ ...SPEC, resources: { memoryMb: 48 } });
    envs.push(env);
    // cgroup v1 kills the largest process of the pod, the command, not berth's keep-alive.
    const result = await env.exec('head -c 200m /dev/zero | tail > /dev/null');
    expect(result.exitCode).toBe(137);
    await expect(env.exec('echo alive')).resolves.toMatchObject({ exitCode: 0, stdout: 'alive\n' });
  });

  it('a pod past its lifetime: TaskFailure LifetimeExceeded (the task outlived its budget), not a lost sandbox', async () => {
    const env = await backend().start({ ...SPEC, timeouts: { lifetimeMs: 3000 } });
    envs.push(env);
    await new Promise((r) => setTimeout(r, 5000));
    const error = await failure(env.exec('true'));
    expect(TaskFailure.isInstance(error) && error.type, String(error)).toBe('LifetimeExceeded');
  });
});
