// GPU types on Kubernetes, without GPUs: the pod's required node affinity, read back from the real
// API server as the admin sees it while the pod waits for a node that has such a GPU (this one
// has none), and the startup timeout naming why it could not be placed.
import { afterAll, describe, expect, it } from 'vitest';
import { StartupTimeoutError, parseEnvironmentSpec, type Environment } from '@berth/core';
import { createK8sBackend } from '@berth/backend-k8s';
import type { V1Pod } from '@kubernetes/client-node';
import { gpuAffinity, gpuLabelValues } from '../src/gpu-affinity.js';
import { nodeMisfits } from '../src/node-fit.js';
import { BERTH_KUBECONFIG, NAMESPACE, TOLERATE_FAULT, adminApi } from '@berth/test-support/kube-cluster';

const envs: Environment[] = [];
afterAll(() => Promise.all(envs.map((e) => e.teardown())));

const spec = (resources: object) => parseEnvironmentSpec({ image: 'x', network: 'public', resources });

describe('GPU types as node affinity', () => {
  it('are one In expression over the label values, mapped where options.gpuTypeValues says, repeats dropped', () => {
    const values = { H100: 'NVIDIA-H100-80GB-HBM3', A100: ['NVIDIA-A100-SXM4-40GB', 'NVIDIA-A100-SXM4-80GB'] };
    expect(gpuLabelValues(['H100', 'A100', 'L4', 'H100'], { gpuTypeValues: values })).toEqual([
      'NVIDIA-H100-80GB-HBM3',
      'NVIDIA-A100-SXM4-40GB',
      'NVIDIA-A100-SXM4-80GB',
      'L4',
    ]);
    expect(gpuAffinity(spec({ gpus: 2, gpuTypes: ['T4'] }), { gpuTypeLabel: 'cloud.example/gpu' })).toEqual({
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchExpressions: [{ key: 'cloud.example/gpu', operator: 'In', values: ['T4'] }] }],
        },
      },
    });
    expect(gpuAffinity(spec({ gpus: 1 }), {})).toBeUndefined();
  });

  it("preflight's node check reads the affinity like the scheduler: a node without such a GPU does not fit", () => {
    const pod: V1Pod = { spec: { containers: [], affinity: gpuAffinity(spec({ gpus: 1, gpuTypes: ['H100', 'A100-80GB'] }), {}) } };
    const node = (labels: Record<string, string>) => ({ metadata: { labels }, status: { conditions: [{ type: 'Ready', status: 'True' }] } });
    expect(nodeMisfits(node({ 'nvidia.com/gpu.product': 'A100-80GB' }), pod)).toEqual([]);
    expect(nodeMisfits(node({ 'nvidia.com/gpu.product': 'T4' }), pod)).toEqual(['node affinity (nvidia.com/gpu.product In H100, A100-80GB) does not match']);
    expect(nodeMisfits(node({}), pod)).toHaveLength(1);
  });

  it('the pod asks for the count and any of the types on the configured label; it stays Pending here and start says why', { timeout: 60_000 }, async () => {
    const backend = createK8sBackend({
      kubeconfig: { file: BERTH_KUBECONFIG },
      tolerations: TOLERATE_FAULT,
      gpuTypeValues: { H100: 'NVIDIA-H100-80GB-HBM3' },
    });
    const env = backend.environment({
      image: 'berth-test/busybox:latest',
      network: 'public',
      resources: { gpus: 2, gpuTypes: ['H100', 'A100-80GB'] },
      timeouts: { startupMs: 8000 },
    });
    envs.push(env);
    const started = env.start().then(
      () => undefined,
      (e: unknown) => e,
    );
    // Read back as the admin while it waits for a node.
    let pod: V1Pod | undefined;
    for (let i = 0; i < 50 && !pod; i++) {
      pod = await adminApi()
        .readNamespacedPod({ name: env.id, namespace: NAMESPACE })
        .catch(() => undefined);
      if (!pod) await new Promise((r) => setTimeout(r, 100));
    }
    expect(pod, 'the pod was created').toBeDefined();
    expect(pod!.spec?.containers[0]?.resources?.limits).toMatchObject({ 'nvidia.com/gpu': '2' });
    expect(pod!.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms).toEqual([
      { matchExpressions: [{ key: 'nvidia.com/gpu.product', operator: 'In', values: ['NVIDIA-H100-80GB-HBM3', 'A100-80GB'] }] },
    ]);

    const error = await started;
    expect(StartupTimeoutError.isInstance(error), String(error)).toBe(true);
    // The scheduler's words: no node has the GPUs (this one has none, and no such label).
    expect((error as StartupTimeoutError).lastStatus).toMatch(/Unschedulable.*(nvidia\.com\/gpu|affinity)/);
    // A start that failed leaves nothing behind.
    await env.teardown();
    const after = await adminApi()
      .readNamespacedPod({ name: env.id, namespace: NAMESPACE })
      .then((p) => (p.metadata?.deletionTimestamp ? 'deleting' : 'still there'))
      .catch(() => 'gone');
    expect(['gone', 'deleting']).toContain(after);
  });
});
