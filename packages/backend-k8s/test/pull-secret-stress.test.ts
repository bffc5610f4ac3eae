// The pull Secret one credential's pods share, under churn: 200 pods through one backend instance in
// waves, each wave's starts racing the previous wave's teardowns (so the last user of the Secret
// leaves just as new ones come), some pods evicted while running and some starts given up on
// mid-way. Every pod pulls with the credential (pullPolicy 'always'). Checked against the API's own
// record: no pod is ever created naming a Secret that is deleted or being deleted, and no pull
// fails; and nothing is left.
import { afterAll, describe, expect, it } from 'vitest';
import { CancelledError, ImagePullError, SESSION_ID, type Environment } from '@berth/core';
import { createK8sBackend } from '@berth/backend-k8s';
import { BERTH_KUBECONFIG, NAMESPACE, TOLERATE_FAULT, adminApi } from '@berth/test-support/kube-cluster';
import { pullSecretViolations, recordApi } from './support/api-record.js';

const PODS = 200;
const MAX_WAVE = 16;
const PRIVATE = '127.0.0.1:5000/berth/private-busybox:k8s';
const AUTH = { username: 'berth', password: 'berth-test-secret' };
const ours = `berth.managed=true,berth.session=${SESSION_ID}`;
const leftovers: Environment[] = [];
afterAll(() => Promise.all(leftovers.map((e) => e.teardown().catch(() => undefined))));

const pick = (n: number) => Math.floor(Math.random() * n);

async function evict(name: string): Promise<void> {
  await adminApi().createNamespacedPodEviction({
    name,
    namespace: NAMESPACE,
    body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name, namespace: NAMESPACE } },
  });
}

describe('k8s pull secret under churn', () => {
  it(`${PODS} pods sharing one credential, with racing teardowns, evictions and abandoned starts: no pod names a deleted Secret, no pull fails`, {
    timeout: 600_000,
  }, async () => {
    const backend = createK8sBackend({ kubeconfig: { file: BERTH_KUBECONFIG }, tolerations: TOLERATE_FAULT, pullPolicy: 'always' });
    const record = await recordApi(`berth.session=${SESSION_ID}`);
    const tally = { started: 0, evicted: 0, abandoned: 0 };
    const failures: string[] = [];
    let previous: Promise<unknown> = Promise.resolve();
    let made = 0;
    while (made < PODS) {
      const size = Math.min(PODS - made, 1 + pick(MAX_WAVE));
      made += size;
      // This wave's starts go out while the previous wave's teardowns run (the Secret's last user
      // leaving as new ones come), a moment into them, or once they are done (a new Secret).
      const timing = pick(3);
      if (timing === 1) await new Promise((r) => setTimeout(r, pick(1500)));
      if (timing === 2) await previous;
      const wave = Array.from({ length: size }, async (_, i) => {
        const abandon = i > 0 && pick(10) === 0 ? new AbortController() : undefined;
        if (abandon) setTimeout(() => abandon.abort(), 50 + pick(600));
        let env: Environment;
        try {
          env = await backend.start({ image: { ref: PRIVATE, auth: AUTH }, network: 'public' }, abandon ? { signal: abandon.signal } : {});
        } catch (error) {
          if (abandon && CancelledError.isInstance(error)) return void tally.abandoned++;
          return void failures.push(`${(error as Error).name}: ${(error as Error).message}`);
        }
        leftovers.push(env);
        tally.started++;
        if (pick(8) === 0) {
          await evict(env.id).then(
            () => tally.evicted++,
            () => undefined,
          );
        } else {
          const ran = await env.exec('echo ok');
          if (ran.stdout !== 'ok\n') failures.push(`${env.id}: exec said ${JSON.stringify(ran.stdout)}`);
        }
        return env;
      });
      const settled = await Promise.all(wave);
      await previous;
      // Torn down all at once, not awaited: the next wave starts now.
      previous = Promise.all(settled.map((env) => env?.teardown().catch((e: unknown) => failures.push(`teardown: ${String(e)}`))));
    }
    await previous;
    const changes = await record.stop();

    expect(failures.filter((f) => f.startsWith(ImagePullError.name) || /pull/i.test(f))).toEqual([]);
    expect(failures).toEqual([]);
    expect(pullSecretViolations(changes, (name) => name.startsWith('berth-pull-'))).toEqual([]);
    // The churn was real: the Secret's last user left and a new one came, more than once.
    const secretsMade = changes.filter((c) => c.kind === 'secret-added').length;
    expect(secretsMade).toBeGreaterThanOrEqual(3);
    expect(changes.filter((c) => c.kind === 'pod-added').length).toBeGreaterThanOrEqual(PODS - tally.abandoned);
    expect(tally.evicted).toBeGreaterThanOrEqual(10);
    expect(tally.abandoned).toBeGreaterThanOrEqual(5);
    console.log(
      `[pull secret stress] ${PODS} starts: ${tally.started} started, ${tally.evicted} evicted, ${tally.abandoned} abandoned; ${secretsMade} Secrets made`,
    );

    // Nothing left, including what the abandoned starts made after they were given up on.
    for (let i = 0; i < 60; i++) {
      const pods = await adminApi().listNamespacedPod({ namespace: NAMESPACE, labelSelector: ours });
      const secrets = await adminApi().listNamespacedSecret({ namespace: NAMESPACE, labelSelector: `${ours},berth.pull-secret=true` });
      if (pods.items.length + secrets.items.length === 0) return;
      await new Promise((r) => setTimeout(r, 500));
    }
    const pods = await adminApi().listNamespacedPod({ namespace: NAMESPACE, labelSelector: ours });
    const secrets = await adminApi().listNamespacedSecret({ namespace: NAMESPACE, labelSelector: `${ours},berth.pull-secret=true` });
    expect([...pods.items, ...secrets.items].map((o) => o.metadata?.name)).toEqual([]);
  });
});
