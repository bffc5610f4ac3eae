// The guardian on the test cluster: a process that started pods with registry credentials (so a
// pull secret of its own) and is then killed (SIGKILL, or SIGTERM with no handler) leaves neither
// pods nor pull secret within 30 s; of two such processes only the killed one's go.
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { goneWithin, startChild, type GuardedChild } from '@berth/test-support/guardian-children';
import { BERTH_KUBECONFIG, NAMESPACE, TOLERATE_FAULT, adminApi } from '@berth/test-support/kube-cluster';

const PRIVATE = '127.0.0.1:5000/berth/private-busybox:k8s';
const api = adminApi();
const children: GuardedChild[] = [];
const tags: string[] = [];

const pods = async (tag: string) => (await api.listNamespacedPod({ namespace: NAMESPACE, labelSelector: `berth.test-guardian=${tag}` })).items.length;
/** The pull secrets of a process (berth labels them with its pid). */
const secrets = async (pid: number) =>
  (await api.listNamespacedSecret({ namespace: NAMESPACE, labelSelector: `berth.pull-secret=true,berth.owner-pid=${pid}` })).items.length;
const both = (tag: string, pid: number) => async () => (await pods(tag)) + (await secrets(pid));

afterAll(async () => {
  for (const child of children) child.proc.kill('SIGKILL');
  for (const tag of tags) await api.deleteCollectionNamespacedPod({ namespace: NAMESPACE, labelSelector: `berth.test-guardian=${tag}`, gracePeriodSeconds: 0 });
});

const run = (count: number) => {
  const tag = `g-${randomBytes(4).toString('hex')}`;
  tags.push(tag);
  const child = startChild('k8s', count, tag, {
    GUARDIAN_CHILD_OPTIONS: JSON.stringify({ kubeconfig: { file: BERTH_KUBECONFIG }, tolerations: TOLERATE_FAULT }),
    GUARDIAN_CHILD_SPEC: JSON.stringify({ image: { ref: PRIVATE, auth: { username: 'berth', password: 'berth-test-secret' } }, network: 'public' }),
  });
  children.push(child);
  return { tag, child, pid: child.proc.pid! };
};

describe('k8s guardian', () => {
  for (const signal of ['SIGKILL', 'SIGTERM'] as const) {
    it(`a process killed with ${signal} leaves none of its 3 pods, nor its pull secret, within 30 s`, async () => {
      const { tag, child, pid } = run(3);
      await child.ready;
      expect(await pods(tag)).toBe(3);
      expect(await secrets(pid)).toBe(1);
      child.proc.kill(signal);
      expect(await child.exited).toBe(signal);
      const took = await goneWithin(both(tag, pid), 30_000);
      console.log(`k8s guardian, ${signal}: 3 pods and the pull secret gone ${took} ms after the kill`);
      expect(took).toBeDefined();
    }, 180_000);
  }

  it('a process killed in the middle of its starts (creates in flight) leaves no pod and no secret', async () => {
    const { tag, child, pid } = run(4);
    // Killed as soon as the cluster has its first pod, the others being made.
    while ((await pods(tag)) === 0) await new Promise((r) => setTimeout(r, 20));
    child.proc.kill('SIGKILL');
    await child.exited;
    expect(await goneWithin(both(tag, pid), 30_000)).toBeDefined();
    // And nothing comes back: a create that landed late is caught by the guardian's second look.
    await new Promise((r) => setTimeout(r, 7000));
    expect(await both(tag, pid)()).toBe(0);
  }, 120_000);

  it('two processes on one host and one session: killing one removes only its pods and secret', async () => {
    const a = run(1);
    const b = run(1);
    await Promise.all([a.child.ready, b.child.ready]);
    a.child.proc.kill('SIGKILL');
    expect(await goneWithin(both(a.tag, a.pid), 30_000)).toBeDefined();
    await new Promise((r) => setTimeout(r, 2000));
    expect(await pods(b.tag)).toBe(1);
    expect(await secrets(b.pid)).toBe(1);
    b.child.proc.kill('SIGKILL');
    expect(await goneWithin(both(b.tag, b.pid), 30_000)).toBeDefined();
  }, 180_000);
});
