// How the backend finds its cluster (issue 17, item 4), through @kubernetes/client-node's real
// loading, with HOME and KUBECONFIG pointed at temporary directories. No kubeconfig anywhere is a
// ConfigError that says what was looked for and what to do, from every operation (no cluster
// needed); a context that names no namespace gets 'default', and says so (the preflight lines are
// the test cluster's).
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ConfigError, classifyFailure } from '@berth/core';
import { createK8sBackend } from '@berth/backend-k8s';
import { ADMIN_KUBECONFIG, BERTH_KUBECONFIG, NAMESPACE } from '@berth/test-support/kube-cluster';

const TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';
const FIX = 'pass options.kubeconfig, set KUBECONFIG, or create ~/.kube/config';
const SPEC = { image: 'berth-test/busybox:latest', network: 'public' as const };
const dirs: string[] = [];
let home = '';

beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'berth-home-'));
  dirs.push(home);
  vi.stubEnv('HOME', home);
  vi.stubEnv('KUBECONFIG', undefined);
  vi.stubEnv('KUBERNETES_SERVICE_HOST', undefined);
  vi.stubEnv('KUBERNETES_SERVICE_PORT', undefined);
});
afterEach(() => void vi.unstubAllEnvs());
afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

function expectNoKubeconfig(error: unknown): void {
  expect(ConfigError.isInstance(error), String(error)).toBe(true);
  expect(error).toMatchObject({ path: 'options.kubeconfig', category: 'permanent_infra', retryable: false });
  const message = (error as Error).message;
  expect(message).toContain(`KUBECONFIG is not set, ${join(home, '.kube', 'config')} does not exist`);
  expect(message).toContain(FIX);
  expect(message).not.toMatch(/HTTP protocol|skipTLSVerify/);
}

async function kubeconfigWithoutNamespace(): Promise<string> {
  const file = join(home, 'kubeconfig');
  await writeFile(
    file,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters: [{ name: c, cluster: { server: "https://127.0.0.1:1" } }]',
      'users: [{ name: u, user: { token: not-a-secret } }]',
      'contexts: [{ name: no-namespace, context: { cluster: c, user: u } }]',
      'current-context: no-namespace',
    ].join('\n'),
  );
  return file;
}

describe('k8s without any kubeconfig', () => {
  it('start, environment, sweep and target are ConfigErrors saying what was looked for and how to fix it', async () => {
    const backend = createK8sBackend();
    const started = await backend.start(SPEC).catch((e: unknown) => e);
    expectNoKubeconfig(started);
    expect(classifyFailure(started)).toMatchObject({ category: 'permanent_infra', type: 'ConfigError' });
    expect(started).toMatchObject({ message: expect.stringContaining('KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set') });
    expectNoKubeconfig(await backend.sweep().catch((e: unknown) => e));
    expectNoKubeconfig(
      await Promise.resolve()
        .then(() => backend.environment(SPEC))
        .catch((e: unknown) => e),
    );
    expectNoKubeconfig(
      await Promise.resolve()
        .then(() => backend.target)
        .catch((e: unknown) => e),
    );
    expectNoKubeconfig(
      await Promise.resolve()
        .then(() => backend.resolveTarget())
        .catch((e: unknown) => e),
    );
    // A context alone still needs a file to take it from.
    expectNoKubeconfig(
      await createK8sBackend({ kubeconfig: { context: 'evals' } })
        .start(SPEC)
        .catch((e: unknown) => e),
    );
  });

  it('preflight reports it as a failed check, and does not throw', async () => {
    const report = await createK8sBackend().preflight(SPEC);
    expect(report.ok).toBe(false);
    expect(report.checks).toEqual([
      expect.objectContaining({
        name: 'kubeconfig',
        status: 'fail',
        message: expect.stringContaining(FIX),
        error: expect.objectContaining({ type: 'ConfigError' }),
      }),
    ]);
  });

  it.skipIf(existsSync(TOKEN))('KUBERNETES_SERVICE_HOST without a mounted token is not a pod of the cluster', async () => {
    vi.stubEnv('KUBERNETES_SERVICE_HOST', '10.0.0.1');
    vi.stubEnv('KUBERNETES_SERVICE_PORT', '443');
    const error = await createK8sBackend()
      .start(SPEC)
      .catch((e: unknown) => e);
    expectNoKubeconfig(error);
    expect((error as Error).message).toContain(`no service account token at ${TOKEN}`);
  });
});

describe('k8s namespace resolution', () => {
  it("a context that names no namespace: 'default', and where it came from, read from the kubeconfig alone", async () => {
    vi.stubEnv('KUBECONFIG', await kubeconfigWithoutNamespace());
    const backend = createK8sBackend();
    expect(backend.resolveTarget()).toEqual({ server: 'https://127.0.0.1:1', context: 'no-namespace', namespace: 'default', namespaceFrom: 'default' });
    expect(createK8sBackend({ namespace: 'evals' }).resolveTarget()).toMatchObject({ namespace: 'evals', namespaceFrom: 'options' });
    // The API is not there: the failed check still says where it asked, and why that namespace.
    const report = await backend.preflight();
    expect(report.checks[0]).toMatchObject({
      name: 'api',
      status: 'fail',
      message: expect.stringContaining(`namespace default; context "no-namespace" names no namespace: 'default' is used`),
    });
  });

  it("preflight's passing line names the server and the namespace it will use (the test cluster)", async () => {
    // The admin's kubeconfig names no namespace; berth's, in ~/.kube/config, names berth-test.
    vi.stubEnv('KUBECONFIG', ADMIN_KUBECONFIG);
    const admin = await createK8sBackend().preflight();
    const { server } = createK8sBackend().resolveTarget();
    expect(admin.checks[0]).toEqual({
      name: 'api',
      status: 'ok',
      message: `the Kubernetes API at ${server} lists pods in default (context "berth-test" names no namespace: 'default' is used)`,
    });

    vi.stubEnv('KUBECONFIG', undefined);
    await mkdir(join(home, '.kube'));
    await writeFile(join(home, '.kube', 'config'), await readFile(BERTH_KUBECONFIG));
    expect(createK8sBackend().resolveTarget()).toMatchObject({ server, namespace: NAMESPACE, namespaceFrom: 'context' });
    const berth = await createK8sBackend().preflight();
    expect(berth.checks[0]).toMatchObject({
      name: 'api',
      status: 'ok',
      message: `the Kubernetes API at ${server} lists pods in ${NAMESPACE} (namespace from context "berth-test")`,
    });
  });
});
