// Mounts on the test cluster: host paths (the node is this machine here), and image mounts from a
// private registry, whose credentials become the pod's pull secret like the task image's.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ImagePullError, type Environment } from '@berth/core';
import { createK8sBackend } from '@berth/backend-k8s';
import { BERTH_KUBECONFIG, TOLERATE_FAULT, ctr } from '@berth/test-support/kube-cluster';

const PRIVATE = '127.0.0.1:5000/berth/private-busybox:k8s';
const AUTH = { username: 'berth', password: 'berth-test-secret' };
const SPEC = { image: 'berth-test/busybox:latest', network: 'public' as const };
const envs: Environment[] = [];
const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(envs.map((e) => e.teardown()));
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});
const backend = () => createK8sBackend({ kubeconfig: { file: BERTH_KUBECONFIG }, tolerations: TOLERATE_FAULT });

describe('k8s mounts', () => {
  it('a bind mount is a hostPath on the node: read-only by default, writable when asked', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'berth-bind-'));
    dirs.push(dir);
    await writeFile(join(dir, 'given.txt'), 'from the host\n');
    const env = await backend().start({
      ...SPEC,
      mounts: [
        { type: 'bind', source: dir, target: '/mnt/ro' },
        { type: 'bind', source: dir, target: '/mnt/rw', readOnly: false },
      ],
    });
    envs.push(env);
    expect((await env.exec('cat /mnt/ro/given.txt')).stdout).toBe('from the host\n');
    expect((await env.exec('touch /mnt/ro/x')).exitCode).not.toBe(0);
    expect((await env.exec('echo back > /mnt/rw/written.txt')).exitCode).toBe(0);
    expect(await readFile(join(dir, 'written.txt'), 'utf8')).toBe('back\n');
  });

  it('an image mount from a private registry: its credentials make the pull secret; without them, ImagePullError naming that image', async () => {
    await ctr('images', 'rm', PRIVATE).catch(() => undefined);
    const env = await backend().start({ ...SPEC, mounts: [{ type: 'image', image: { ref: PRIVATE, auth: AUTH }, subpath: 'bin', target: '/opt/runtime' }] });
    envs.push(env);
    expect((await env.exec(['/opt/runtime/sh', '-c', 'echo runtime'])).stdout).toBe('runtime\n');

    await ctr('images', 'rm', PRIVATE).catch(() => undefined);
    const anonymous = backend().environment({ ...SPEC, mounts: [{ type: 'image', image: PRIVATE, target: '/opt/runtime' }] });
    envs.push(anonymous);
    const error = await anonymous.start().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(ImagePullError.isInstance(error), String(error)).toBe(true);
    expect(error).toMatchObject({ reason: 'unauthorized', image: PRIVATE });
  });
});
