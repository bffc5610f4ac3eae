// defaultLifetimeMs on the test cluster: a pod whose spec sets no lifetime gets the backend's
// default as activeDeadlineSeconds, the cluster itself ends it there (DeadlineExceeded, nothing of
// berth acting: even with its process killed and no guardian), and berth says it was the backend's
// default, naming the option, rather than a lost sandbox or a lifetime the task never asked for.
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { TaskFailure, type Environment } from '@berth/core';
import { createK8sBackend } from '@berth/backend-k8s';
import { startChild, type GuardedChild } from '@berth/test-support/guardian-children';
import { BERTH_KUBECONFIG, NAMESPACE, TOLERATE_FAULT, adminApi } from '@berth/test-support/kube-cluster';

const api = adminApi();
const envs: Environment[] = [];
const children: GuardedChild[] = [];
const tags: string[] = [];
afterAll(async () => {
  for (const child of children) child.proc.kill('SIGKILL');
  await Promise.all(envs.map((e) => e.teardown()));
  for (const tag of tags) await api.deleteCollectionNamespacedPod({ namespace: NAMESPACE, labelSelector: `berth.test-guardian=${tag}`, gracePeriodSeconds: 0 });
});

const backend = (defaultLifetimeMs?: number | false) =>
  createK8sBackend({ kubeconfig: { file: BERTH_KUBECONFIG }, tolerations: TOLERATE_FAULT, ...(defaultLifetimeMs !== undefined ? { defaultLifetimeMs } : {}) });
const SPEC = { image: 'berth-test/busybox:latest', network: 'public' as const };

async function started(defaultLifetimeMs: number | false | undefined, spec: Record<string, unknown> = {}): Promise<Environment> {
  const env = await backend(defaultLifetimeMs).start({ ...SPEC, ...spec });
  envs.push(env);
  return env;
}

/** Waits until the cluster says the pod failed; returns its status reason. */
async function endedBy(name: string, withinMs: number): Promise<string | undefined> {
  const until = Date.now() + withinMs;
  while (Date.now() < until) {
    const pod = await api.readNamespacedPod({ name, namespace: NAMESPACE });
    if (pod.status?.phase === 'Failed' || pod.status?.phase === 'Succeeded') return `${pod.status.phase} ${pod.status.reason ?? ''}`.trim();
    await new Promise((r) => setTimeout(r, 250));
  }
  return undefined;
}

function byDefault(error: unknown, ms: number): void {
  expect(TaskFailure.isInstance(error) && error.type, String(error)).toBe('LifetimeExceeded');
  expect((error as Error).message).toMatch(new RegExp(`reached the k8s backend's default lifetime of ${ms} ms \\(${ms / 1000} s\\) during exec`));
  expect((error as Error).message).toMatch(
    /the spec sets no timeouts\.lifetimeMs, so the backend option defaultLifetimeMs applied; for longer tasks raise defaultLifetimeMs/,
  );
}

describe('defaultLifetimeMs on a real cluster', () => {
  it('a pod without a lifetime: activeDeadlineSeconds is the default (24 h); the spec wins; false leaves none', async () => {
    const plain = await started(undefined);
    const own = await started(3000, { timeouts: { lifetimeMs: 600_000 } });
    const off = await started(false);
    const read = (env: Environment) => api.readNamespacedPod({ name: env.id, namespace: NAMESPACE });
    const [a, b, c] = await Promise.all([read(plain), read(own), read(off)]);
    expect(a.spec?.activeDeadlineSeconds).toBe(86_400);
    expect(a.metadata?.annotations?.['berth.default-lifetime-ms']).toBe('86400000');
    expect(b.spec?.activeDeadlineSeconds).toBe(600);
    expect(b.metadata?.annotations?.['berth.default-lifetime-ms']).toBeUndefined();
    expect(c.spec?.activeDeadlineSeconds).toBeUndefined();
    await Promise.all([plain, own, off].map((e) => e.teardown()));
  }, 120_000);

  // 10 s lifetimes: on a loaded 2-core machine a pod can take several seconds to run, and a
  // deadline that ends it before berth sees it running is another case (LifetimeExceeded at start).
  // The three run at once.
  it.concurrent('a command running when the default lifetime ends the pod: LifetimeExceeded naming the option, and the cluster said DeadlineExceeded', async () => {
    const env = await started(10_000);
    const error = await env.exec('sleep 60').catch((e: unknown) => e);
    byDefault(error, 10_000);
    expect(await endedBy(env.id, 10_000)).toBe('Failed DeadlineExceeded');
  }, 120_000);

  it.concurrent('the first call after the cluster ended the pod at the default lifetime says the same', async () => {
    const env = await started(10_000);
    expect(await endedBy(env.id, 40_000)).toBe('Failed DeadlineExceeded');
    byDefault(await env.exec('true').catch((e: unknown) => e), 10_000);
  }, 120_000);

  it.concurrent('a process killed with no guardian (a machine gone whole): the cluster ends its pod at the default lifetime by itself', async () => {
    const tag = `l-${randomBytes(4).toString('hex')}`;
    tags.push(tag);
    const child = startChild('k8s', 1, tag, {
      BERTH_GUARDIAN: '0',
      GUARDIAN_CHILD_OPTIONS: JSON.stringify({ kubeconfig: { file: BERTH_KUBECONFIG }, tolerations: TOLERATE_FAULT, defaultLifetimeMs: 10_000 }),
      GUARDIAN_CHILD_SPEC: JSON.stringify({ network: 'public' }),
    });
    children.push(child);
    await child.ready;
    const pods = await api.listNamespacedPod({ namespace: NAMESPACE, labelSelector: `berth.test-guardian=${tag}` });
    expect(pods.items).toHaveLength(1);
    const name = pods.items[0]!.metadata!.name!;
    child.proc.kill('SIGKILL');
    await child.exited;
    const killedAt = Date.now();
    // Nothing of berth is left to act: the kubelet ends the pod at activeDeadlineSeconds.
    expect(await endedBy(name, 40_000)).toBe('Failed DeadlineExceeded');
    console.log(`k8s: the killed process's pod ended by the cluster (DeadlineExceeded) ${Date.now() - killedAt} ms after the kill`);
    // It is still there, ended, for `berth sweep` (its owner is dead) to remove.
    expect((await api.readNamespacedPod({ name, namespace: NAMESPACE })).metadata?.annotations?.['berth.default-lifetime-ms']).toBe('10000');
  }, 120_000);
});
