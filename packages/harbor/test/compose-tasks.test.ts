// harbor compose tasks (environment/docker-compose.yaml) through runHarborJob on Docker, the test
// cluster and the Modal simulator, unchanged:
// three tasks shaped like real ones (test/fixtures/compose-tasks: the cookbook's API server built
// from a subdirectory and awaited healthy; a database with a one-shot migration main waits for; a
// mock API reached by a network alias, configured by interpolated variables), each rewarded 1 by
// the oracle, nothing left behind.
import { cp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { createDockerBackend, createRegistryImageBuilder } from '@berth/backend-docker';
import { createK8sBackend } from '@berth/backend-k8s';
import { createModalBackend } from '@berth/backend-modal';
import { ModalSimulator } from '@berth/test-support/modal-sim';
import { BERTH_KUBECONFIG, NAMESPACE, TOLERATE_FAULT, adminApi } from '@berth/test-support/kube-cluster';
import { runHarborJob } from '@berth/harbor';
import { removeBuiltImages, tempDir } from './support.js';

const FIXTURES = fileURLToPath(new URL('../../../test/fixtures/compose-tasks/', import.meta.url));
const dirs: string[] = [];
afterAll(async () => {
  // Built images are tagged by their context's content: the fixtures' own are the copies'.
  await removeBuiltImages([
    join(FIXTURES, 'api-healthy', 'environment'),
    join(FIXTURES, 'api-healthy', 'environment', 'api-server'),
    join(FIXTURES, 'db-migrate', 'environment', 'db'),
  ]);
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

describe('harbor compose tasks on the test cluster', () => {
  it('each runs with its services (containers of its pod) and the oracle gets reward 1; no pod is left', { timeout: 300_000 }, async () => {
    const base = await tempDir('compose-k8s');
    dirs.push(base);
    const k8sTasks = join(base, 'tasks');
    await cp(FIXTURES, k8sTasks, { recursive: true });
    const labels = { 'berth.test': `compose-k8s-${Date.now()}` };
    const backend = createK8sBackend({
      kubeconfig: { file: BERTH_KUBECONFIG },
      namespace: NAMESPACE,
      tolerations: TOLERATE_FAULT,
      labels,
      probeRegistries: ['127.0.0.1:5000'],
      // Dockerfiles: the local engine builds and pushes to the test registry; the pod pulls from there.
      builder: createRegistryImageBuilder({ repository: '127.0.0.1:5000/berth/builds', auth: { username: 'berth', password: 'berth-test-secret' } }),
    });
    const run = await runHarborJob({ tasksDir: k8sTasks, backend, jobDir: join(base, 'job') });
    const outcomes = Object.fromEntries(
      run.tasks.map((t) => [t.taskId, t.status === 'scored' ? t.outcome?.reward : `${t.status}: ${JSON.stringify(t.failure ?? t)}`]),
    );
    expect(outcomes).toEqual({ 'api-healthy': 1, 'db-migrate': 1, 'mock-api-alias': 1 });
    const pods = await adminApi().listNamespacedPod({ namespace: NAMESPACE, labelSelector: `berth.test=${labels['berth.test']}` });
    expect(pods.items.map((p) => p.metadata?.name)).toEqual([]);
  });
});

describe('harbor compose tasks on the Modal simulator', () => {
  it('each runs with its services (a sandbox each, over i6pn) and the oracle gets reward 1', { timeout: 300_000 }, async () => {
    const base = await tempDir('compose-modal');
    dirs.push(base);
    const modalTasks = join(base, 'tasks');
    await cp(FIXTURES, modalTasks, { recursive: true });
    const sim = await ModalSimulator.start();
    const backend = createModalBackend({ serverUrl: sim.url, ca: sim.ca, tokenId: sim.tokenId, tokenSecret: sim.tokenSecret, modalConfigEnv: {} });
    try {
      const run = await runHarborJob({ tasksDir: modalTasks, backend, jobDir: join(base, 'job') });
      const outcomes = Object.fromEntries(
        run.tasks.map((t) => [t.taskId, t.status === 'scored' ? t.outcome?.reward : `${t.status}: ${JSON.stringify(t.failure ?? t)}`]),
      );
      expect(outcomes).toEqual({ 'api-healthy': 1, 'db-migrate': 1, 'mock-api-alias': 1 });
    } finally {
      await backend.close();
      await sim.close();
    }
  });
});

describe('harbor compose tasks on Docker', () => {
  it('each runs with its services and the oracle gets reward 1; no container or network is left', { timeout: 300_000 }, async () => {
    const base = await tempDir('compose');
    dirs.push(base);
    const tasks = join(base, 'tasks');
    await cp(FIXTURES, tasks, { recursive: true });
    const labels = { 'berth.test': `compose-${Date.now()}` };
    const run = await runHarborJob({ tasksDir: tasks, backend: createDockerBackend({ labels }), jobDir: join(base, 'job') });
    const outcomes = Object.fromEntries(
      run.tasks.map((t) => [t.taskId, t.status === 'scored' ? t.outcome?.reward : `${t.status}: ${JSON.stringify(t.failure ?? t)}`]),
    );
    expect(outcomes).toEqual({ 'api-healthy': 1, 'db-migrate': 1, 'mock-api-alias': 1 });
    const docker = new Docker();
    const label = [`berth.test=${labels['berth.test']}`];
    expect(await docker.listContainers({ all: true, filters: { label } })).toEqual([]);
    expect(await docker.listNetworks({ filters: { label } })).toEqual([]);
  });
});
