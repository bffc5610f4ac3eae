// Exec as another user where the engine's exec has no user (Kubernetes, Modal), on an image with no
// tool that can switch users: a clear ConfigError naming what was looked for and what to install,
// never a command run as root. The same commands as the image's own user still run.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, type Backend, type Environment } from '@berth/core';
import { createK8sBackend } from '@berth/backend-k8s';
import { createModalBackend } from '@berth/backend-modal';
import { BERTH_KUBECONFIG, NAMESPACE, ctr } from '@berth/test-support/kube-cluster';
import { ModalSimulator } from '@berth/test-support/modal-sim';
import { ensureNoUserToolsImage, importIntoNode, NO_USER_TOOLS_IMAGE } from './support/no-user-tools-image.js';

const run = promisify(execFile);

let sim: ModalSimulator;
const closers: Array<() => Promise<unknown>> = [];
beforeAll(async () => {
  await ensureNoUserToolsImage();
  await importIntoNode(ctr);
  sim = await ModalSimulator.start();
}, 120_000);
afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
  await sim?.close();
  await ctr('images', 'rm', `docker.io/${NO_USER_TOOLS_IMAGE}`).catch(() => undefined);
  await run('docker', ['image', 'rm', NO_USER_TOOLS_IMAGE]).catch(() => undefined);
});

const backends: Array<[string, () => Backend]> = [
  ['k8s', () => createK8sBackend({ kubeconfig: { file: BERTH_KUBECONFIG }, namespace: NAMESPACE, pullPolicy: 'never' })],
  [
    'modal',
    () => {
      const backend = createModalBackend({ serverUrl: sim.url, ca: sim.ca, tokenId: sim.tokenId, tokenSecret: sim.tokenSecret, modalConfigEnv: {} });
      closers.push(() => backend.close());
      return backend;
    },
  ],
];

describe.each(backends)('%s: exec as a user on an image without any tool to switch users', (_name, make) => {
  let env: Environment;
  beforeAll(async () => {
    env = await make().start({ image: NO_USER_TOOLS_IMAGE, network: 'public' });
    closers.push(() => env.teardown());
  }, 120_000);

  it('is a ConfigError on opts.user that names the tools looked for and what to install; nothing runs', async () => {
    for (const user of ['1234:2345', 'app']) {
      const error = await env.exec(['sh', '-c', 'echo ran > /tmp/ran'], { user }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(ConfigError.isInstance(error), `${user}: ${String(error)}`).toBe(true);
      expect((error as ConfigError).path).toBe('opts.user');
      const message = (error as Error).message;
      expect(message).toContain(`cannot run as user ${user}: the image has none of the tools berth looks for`);
      expect(message).toMatch(/looked for: setpriv \(util-linux\), chroot --userspec \(coreutils\), nsenter .*su-exec, gosu, chpst .*su \(/);
      expect(message).toContain('apt-get install util-linux');
    }
    expect((await env.exec(['sh', '-c', 'cat /tmp/ran 2>/dev/null || echo none'])).stdout).toBe('none\n');
  });

  it("the image's own user still runs, by name or uid; an unknown user is still the unknown user", async () => {
    expect((await env.exec(['id', '-u'], { user: 'root' })).stdout).toBe('0\n');
    expect((await env.exec(['id', '-u'], { user: '0:0' })).stdout).toBe('0\n');
    const unknown = await env.exec(['true'], { user: 'berth-no-such-user' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((unknown as Error).message).toContain('unable to find user berth-no-such-user');
  });
});
