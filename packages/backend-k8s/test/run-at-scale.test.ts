// 200 tasks through runTrials on the test cluster while pods are evicted at random through the
// eviction API: every task is scored (the evicted attempts retried as the transient failures they
// are), and nothing is left behind: no pod, no pull secret.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SESSION_ID, runTrials } from '@berth/core';
import { createK8sBackend } from '@berth/backend-k8s';
import { BERTH_KUBECONFIG, NAMESPACE, TOLERATE_FAULT, adminApi } from '@berth/test-support/kube-cluster';

const TASKS = 200;
const PRIVATE = '127.0.0.1:5000/berth/private-busybox:k8s';
const AUTH = { username: 'berth', password: 'berth-test-secret' };
const ours = `berth.managed=true,berth.session=${SESSION_ID}`;

let evicting = true;
afterAll(() => {
  evicting = false;
});

/**
 * Evict one of this run's running pods every `everyMs`, through the eviction API, until stopped or
 * `budget` pods are gone. Only while many pods run: at the tail of the run the few last tasks
 * would otherwise take every eviction, which no retry budget survives.
 */
async function evictAtRandom(everyMs: number, budget: number, evicted: Set<string>): Promise<void> {
  const api = adminApi();
  while (evicting && evicted.size < budget) {
    await new Promise((r) => setTimeout(r, everyMs));
    const pods = await api.listNamespacedPod({ namespace: NAMESPACE, labelSelector: ours, fieldSelector: 'status.phase=Running' }).catch(() => undefined);
    const running = (pods?.items ?? []).filter((p) => !p.metadata?.deletionTimestamp && !evicted.has(p.metadata?.name ?? ''));
    // Half the run's concurrency: on a loaded machine fewer pods are Running at once (seen: 3
    // evictions in a whole run with 12 required), and the tail still keeps its pods.
    if (running.length < 8) continue;
    const victim = running[Math.floor(Math.random() * running.length)]?.metadata?.name;
    if (!victim) continue;
    await api
      .createNamespacedPodEviction({
        name: victim,
        namespace: NAMESPACE,
        body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: victim, namespace: NAMESPACE } },
      })
      .then(
        () => evicted.add(victim),
        () => undefined,
      );
  }
}

describe('k8s at scale', () => {
  it(`${TASKS} tasks through runTrials with random evictions: every task scored, nothing left behind`, { timeout: 600_000 }, async () => {
    const backend = createK8sBackend({ kubeconfig: { file: BERTH_KUBECONFIG }, tolerations: TOLERATE_FAULT });
    const tasks = Array.from({ length: TASKS }, (_, i) => `task-${String(i).padStart(3, '0')}`);
    const dir = await mkdtemp(join(tmpdir(), 'berth-scale-'));
    await Promise.all(tasks.map((task) => writeFile(join(dir, task), task)));
    const evicted = new Set<string>();
    const evictor = evictAtRandom(400, 40, evicted);
    let result;
    try {
      result = await runTrials(
        tasks,
        async (task, { signal }) => {
          // A private image with its credentials: one pull Secret for the whole run.
          await using env = await backend.start({ image: { ref: PRIVATE, auth: AUTH }, network: 'public', labels: { 'berth.test/task': task } }, { signal });
          await env.uploadFile(join(dir, task), '/work/task.txt', { signal });
          const run = await env.exec('sleep 1; cat /work/task.txt', { signal });
          return { reward: run.exitCode === 0 && run.stdout === task ? 1 : 0 };
        },
        { concurrency: 24, maxAttempts: 6, backoff: { initialMs: 100, maxMs: 1000 } },
      );
    } finally {
      evicting = false;
      await evictor;
      await rm(dir, { recursive: true, force: true });
    }
    const { report } = result;
    expect(report.total).toBe(TASKS);
    // On a failure, say which tasks and why (each unscored task's last failure, whole).
    const unscored = result.tasks
      .filter((t) => t.status !== 'scored')
      .map((t) => `${t.taskId}: ${t.failure?.category} ${t.failure?.type}: ${t.failure?.message}`);
    expect(report.scored, `${JSON.stringify(report.byType)}\n${unscored.join('\n')}`).toBe(TASKS);
    expect(report.valid, report.invalidReasons.join('; ')).toBe(true);
    expect(report.score?.mean).toBe(1);
    // The evictions were real and were seen as lost sandboxes, retried, never as task failures.
    expect(evicted.size).toBeGreaterThanOrEqual(10);
    // Lost sandboxes, directly or as the cause of a transfer cut short (TransferError, transient
    // through its SandboxLostError cause): which one depends on when the eviction lands.
    expect((report.byType.SandboxLostError ?? 0) + (report.byType.TransferError ?? 0), JSON.stringify(report.byType)).toBeGreaterThanOrEqual(5);
    expect(Object.keys(report.byCategory)).toEqual(['transient_infra']);
    expect(report.taskFailures).toBe(0);
    expect(result.tasks.filter((t) => t.attempts.length > 1).length).toBeGreaterThanOrEqual(5);
    console.log(
      `[k8s at scale] ${TASKS} tasks, ${report.attempts} attempts, ${evicted.size} evictions, failures by type ${JSON.stringify(report.byType)}, ${Math.round(report.durationMs / 1000)} s`,
    );

    const pods = await adminApi().listNamespacedPod({ namespace: NAMESPACE, labelSelector: ours });
    expect(pods.items.map((p) => p.metadata?.name)).toEqual([]);
    const secrets = await adminApi().listNamespacedSecret({ namespace: NAMESPACE, labelSelector: ours });
    expect(secrets.items.map((s) => s.metadata?.name)).toEqual([]);
  });
});
