// Registry credentials on the test cluster: spec credentials become one Secret per credential per
// backend instance, gone after the last pod; { secretName } uses the namespace's own; sweep removes
// what a dead process left.
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, ImagePullError, SESSION_ID, serializeError, type Environment } from '@berth/core';
import { createK8sBackend } from '@berth/backend-k8s';
import { BERTH_KUBECONFIG, NAMESPACE, adminApi, ctr, ensurePullSecret, TOLERATE_FAULT } from '@berth/test-support/kube-cluster';

const PRIVATE = '127.0.0.1:5000/berth/private-busybox:k8s';
const AUTH = { username: 'berth', password: 'berth-test-secret' };
const envs: Environment[] = [];
afterAll(() => Promise.all(envs.map((e) => e.teardown())));

async function pullSecrets(): Promise<string[]> {
  const list = await adminApi().listNamespacedSecret({ namespace: NAMESPACE, labelSelector: 'berth.pull-secret=true' });
  return list.items.map((s) => s.metadata?.name ?? '?');
}

describe('k8s pull secrets', () => {
  it('three pods with the same credentials share one Secret, removed with the last of them; no password in it but base64', async () => {
    await ctr('images', 'rm', PRIVATE).catch(() => undefined);
    const backend = createK8sBackend({ kubeconfig: { file: BERTH_KUBECONFIG }, tolerations: TOLERATE_FAULT });
    const before = await pullSecrets();
    const trio = await Promise.all([0, 1, 2].map(() => backend.start({ image: { ref: PRIVATE, auth: AUTH }, network: 'public' })));
    envs.push(...trio);
    const made = (await pullSecrets()).filter((n) => !before.includes(n));
    expect(made).toHaveLength(1);
    const secret = await adminApi().readNamespacedSecret({ name: made[0]!, namespace: NAMESPACE });
    expect(secret.type).toBe('kubernetes.io/dockerconfigjson');
    expect(secret.metadata?.labels).toMatchObject({ 'berth.managed': 'true', 'berth.owner-pid': String(process.pid) });
    // The password only base64-encoded in data: nowhere else in the object, not even in data's raw text.
    expect(JSON.stringify({ ...secret, data: undefined })).not.toContain(AUTH.password);
    expect(JSON.stringify(secret.data)).not.toContain(AUTH.password);
    expect(Object.keys(secret.data ?? {})).toEqual(['.dockerconfigjson']);
    const config = JSON.parse(Buffer.from(secret.data!['.dockerconfigjson']!, 'base64').toString('utf8')) as { auths: Record<string, { auth?: string }> };
    expect(config.auths['127.0.0.1:5000']?.auth).toBe(Buffer.from(`${AUTH.username}:${AUTH.password}`).toString('base64'));
    for (const env of trio) expect((await env.exec('echo ok')).stdout).toBe('ok\n');
    await trio[0]!.teardown();
    await trio[1]!.teardown();
    expect(await pullSecrets()).toContain(made[0]);
    await trio[2]!.teardown();
    expect(await pullSecrets()).not.toContain(made[0]);
  });

  it("{ secretName } uses the namespace's own pull secret; without any, the pull is unauthorized", async () => {
    await ensurePullSecret('berth-test-registry');
    await ctr('images', 'rm', PRIVATE).catch(() => undefined);
    const backend = createK8sBackend({ kubeconfig: { file: BERTH_KUBECONFIG }, tolerations: TOLERATE_FAULT });
    const named = await backend.start({ image: { ref: PRIVATE, auth: { secretName: 'berth-test-registry' } }, network: 'public' });
    envs.push(named);
    expect((await named.exec('echo named')).stdout).toBe('named\n');
    await ctr('images', 'rm', PRIVATE).catch(() => undefined);
    const error = await backend.start({ image: PRIVATE, network: 'public' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(ImagePullError.isInstance(error) && error.reason).toBe('unauthorized');
    // The pod's state and events ride along as the cause: result.json shows what the cluster said.
    const chain = serializeError(error);
    expect(chain.cause).toMatchObject({ name: 'PodState' });
    expect(chain.cause?.message).toMatch(/phase Pending; main: waiting (ErrImagePull|ImagePullBackOff).*events: .*Failed to pull image/);
  });

  it('a named pull secret that does not exist is a ConfigError naming it and where it was named, not "unauthorized"', async () => {
    const backend = createK8sBackend({ kubeconfig: { file: BERTH_KUBECONFIG }, tolerations: TOLERATE_FAULT, pullPolicy: 'always' });
    const fromSpec = await backend.start({ image: { ref: PRIVATE, auth: { secretName: 'no-such-secret' } }, network: 'public' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(ConfigError.isInstance(fromSpec) && [fromSpec.path, fromSpec.message]).toEqual([
      'spec.image.auth.secretName',
      expect.stringContaining(`"no-such-secret" does not exist in namespace ${NAMESPACE}`),
    ]);
    const fromOptions = createK8sBackend({
      kubeconfig: { file: BERTH_KUBECONFIG },
      tolerations: TOLERATE_FAULT,
      pullPolicy: 'always',
      imagePullSecrets: ['gone-secret'],
    });
    const error = await fromOptions.start({ image: PRIVATE, network: 'public' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(ConfigError.isInstance(error) && error.path).toBe('options.imagePullSecrets');
  });

  it('sweep removes a pull secret whose process is gone, and leaves live ones; a dry run only lists what it would remove', async () => {
    const name = `berth-pull-orphan-${process.pid}`;
    await adminApi().createNamespacedSecret({
      namespace: NAMESPACE,
      body: {
        metadata: {
          name,
          labels: {
            'berth.managed': 'true',
            'berth.pull-secret': 'true',
            'berth.owner-pid': '999999',
            'berth.owner-host': (await import('node:os')).hostname(),
          },
        },
        type: 'Opaque',
        data: {},
      },
    });
    const backend = createK8sBackend({ kubeconfig: { file: BERTH_KUBECONFIG }, tolerations: TOLERATE_FAULT });
    const dry = await backend.sweep({ dryRun: true });
    expect(dry).toMatchObject({ dryRun: true, removed: [] });
    expect(dry.wouldRemove).toContain(`secret/${name}`);
    expect(await pullSecrets()).toContain(name);
    // olderThanMs: 0 takes live owners' pods too: in a dry run even this one only is listed, by name.
    const live = await backend.start({ image: 'berth-test/busybox:latest', network: 'public' });
    envs.push(live);
    const all = await backend.sweep({ session: SESSION_ID, olderThanMs: 0, dryRun: true });
    expect(all.wouldRemove).toContain(live.id);
    expect(all.removed).toEqual([]);
    expect((await live.exec('echo still-here')).stdout).toBe('still-here\n');
    const report = await backend.sweep();
    expect(report.removed).toContain(`secret/${name}`);
    expect(report.removed).not.toContain(live.id);
    expect(report.dryRun).toBeUndefined();
    expect(await pullSecrets()).not.toContain(name);
  });
});

describe('k8s preflight', () => {
  it('checks RBAC, that a named pull secret exists, and asks the registry with the credentials the pod would have', async () => {
    await ensurePullSecret('berth-test-registry');
    const backend = createK8sBackend({ kubeconfig: { file: BERTH_KUBECONFIG }, probeRegistries: ['127.0.0.1:5000'] });
    const named = await backend.preflight({ image: { ref: PRIVATE, auth: { secretName: 'berth-test-registry' } }, network: 'public' });
    expect(named.ok, JSON.stringify(named)).toBe(true);
    expect(named.checks.map((c) => [c.name, c.status])).toEqual([
      ['api', 'ok'],
      ['rbac', 'ok'],
      ['spec', 'ok'],
      ['image', 'ok'],
      ['nodes', 'warn'],
    ]);
    const missing = await backend.preflight({ image: { ref: PRIVATE, auth: { secretName: 'no-such-secret' } }, network: 'public' });
    expect(missing.checks.find((c) => c.name === 'image')).toMatchObject({
      status: 'fail',
      message: expect.stringContaining('"no-such-secret" does not exist'),
    });
    const anonymous = await backend.preflight({ image: PRIVATE, network: 'public' });
    expect(anonymous.checks.find((c) => c.name === 'image')?.error?.details).toMatchObject({ reason: 'unauthorized' });
    // The admin's own identity in the default namespace is fine; an identity without the Role is told which verbs it lacks.
    const outside = await createK8sBackend({ kubeconfig: { file: BERTH_KUBECONFIG }, namespace: 'default' }).preflight();
    expect(outside.ok).toBe(false);
    expect(outside.checks.find((c) => c.name === 'api')?.status ?? outside.checks.find((c) => c.name === 'rbac')?.status).toBe('fail');
  });
});
