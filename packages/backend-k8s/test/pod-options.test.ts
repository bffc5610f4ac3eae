// What the options put on the pod, read back from the real API server as the admin sees it.
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, type Environment } from '@berth/core';
import { createK8sBackend } from '@berth/backend-k8s';
import { BERTH_KUBECONFIG, NAMESPACE, TOLERATE_FAULT, adminApi } from '@berth/test-support/kube-cluster';

const envs: Environment[] = [];
afterAll(() => Promise.all(envs.map((e) => e.teardown())));

describe('k8s options on the pod', () => {
  it('mirrors, labels, annotations, resources, lifetime, env and workdir reach the pod; patchPod has the last word', async () => {
    const backend = createK8sBackend({
      kubeconfig: { file: BERTH_KUBECONFIG, context: 'berth-test' },
      tolerations: TOLERATE_FAULT,
      // The task names an image on a registry that does not exist; the mirror sends the node to the one it has.
      mirrors: [{ from: 'registry.invalid/library/', to: 'docker.io/berth-test/' }],
      labels: { team: 'evals', 'berth.managed': 'overridden?' },
      annotations: { 'example.com/run': 'r1' },
      // berth sets terminationGracePeriodSeconds 0 (Kubernetes' default is 30): a 7 on the pod is the patch's word over berth's.
      patchPod: (pod) => ({
        ...pod,
        metadata: { ...pod.metadata, annotations: { ...pod.metadata?.annotations, patched: 'yes' } },
        spec: { ...pod.spec!, terminationGracePeriodSeconds: 7 },
      }),
    });
    const env = await backend.start({
      image: 'registry.invalid/library/busybox:latest',
      network: 'public',
      resources: { cpus: 0.5, memoryMb: 64, storageMb: 100 },
      timeouts: { lifetimeMs: 600_000 },
      env: { GREETING: 'hello' },
      workdir: '/tmp',
    });
    envs.push(env);
    const pod = await adminApi().readNamespacedPod({ name: env.id, namespace: NAMESPACE });
    const container = pod.spec!.containers[0]!;
    expect(container.image).toBe('docker.io/berth-test/busybox:latest');
    expect(pod.metadata?.labels).toMatchObject({ team: 'evals', 'berth.managed': 'true' });
    expect(pod.metadata?.annotations).toMatchObject({ 'example.com/run': 'r1', patched: 'yes' });
    expect(container.resources?.limits).toMatchObject({ cpu: '500m', memory: '64Mi', 'ephemeral-storage': '100Mi' });
    expect(container.resources?.requests).toEqual(container.resources?.limits);
    expect(pod.spec?.activeDeadlineSeconds).toBe(600);
    expect(pod.spec?.restartPolicy).toBe('Never');
    expect(pod.spec?.automountServiceAccountToken).toBe(false);
    expect(pod.spec?.terminationGracePeriodSeconds).toBe(7);
    await expect(env.exec('echo $GREETING; pwd')).resolves.toMatchObject({ stdout: 'hello\n/tmp\n' });
  });

  it('a context the kubeconfig does not have is a ConfigError on options.kubeconfig, before any I/O', () => {
    let error: unknown;
    try {
      createK8sBackend({ kubeconfig: { file: BERTH_KUBECONFIG, context: 'no-such-context' } }).environment({ image: 'busybox', network: 'public' });
    } catch (e) {
      error = e;
    }
    expect(ConfigError.isInstance(error), String(error)).toBe(true);
    expect(error).toMatchObject({ path: 'options.kubeconfig' });
  });
});
