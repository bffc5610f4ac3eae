// harbor itself running compose tasks (environment/docker-compose.yaml) on berth through the
// plugin, which claims docker_compose where the backend runs services: the three fixtures shaped
// like real tasks (test/fixtures/compose-tasks), rewarded 1 by the oracle on Docker, the test
// cluster and the Modal simulator, from harbor's own result files; nothing left.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminApi, BERTH_KUBECONFIG, NAMESPACE } from '@berth/test-support/kube-cluster';
import { removeBuiltImages } from '@berth/test-support/built-images';
import { ModalSimulator } from '@berth/test-support/modal-sim';
import { writeFile } from 'node:fs/promises';
import { writeRegistryLogin } from '@berth/test-support/registry-login';
import { harborContainers, harborRun, outcomes } from './support/harbor.js';

const TASKS = fileURLToPath(new URL('../../../test/fixtures/compose-tasks/', import.meta.url));
const REWARDS = { 'api-healthy': 1, 'db-migrate': 1, 'mock-api-alias': 1 };

let root: string;
let dockerConfig: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'berth-harbor-compose-'));
  dockerConfig = await writeRegistryLogin(join(root, 'docker-config'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
  await removeBuiltImages([
    join(TASKS, 'api-healthy', 'environment'),
    join(TASKS, 'api-healthy', 'environment', 'api-server'),
    join(TASKS, 'db-migrate', 'environment', 'db'),
  ]);
});

describe('harbor compose tasks through the plugin', () => {
  it('docker: each task with its services rewarded 1; no container or network left', async () => {
    const jobs = join(root, 'jobs');
    const run = await harborRun(TASKS, jobs, 'compose-docker', { backend: 'docker' });
    expect(outcomes(join(jobs, 'compose-docker')), run.output).toEqual(REWARDS);
    expect(await harborContainers()).toEqual([]);
    expect(await new Docker().listNetworks({ filters: { label: ['berth.harbor=true'] } })).toEqual([]);
  }, 600_000);

  it('kubernetes: each task with its services (containers of its pod; images built with --ek build_repository) rewarded 1; no pod left', async () => {
    const jobs = join(root, 'jobs');
    const ek = { backend: 'k8s', kubeconfig: BERTH_KUBECONFIG, build_repository: '127.0.0.1:5000/berth/harbor-builds' };
    const run = await harborRun(TASKS, jobs, 'compose-k8s', ek, { env: { DOCKER_CONFIG: dockerConfig } });
    expect(outcomes(join(jobs, 'compose-k8s')), run.output).toEqual(REWARDS);
    const pods = await adminApi().listNamespacedPod({ namespace: NAMESPACE, labelSelector: 'berth.harbor' });
    expect(pods.items.map((p) => p.metadata?.name)).toEqual([]);
  }, 600_000);

  it('modal (the simulator): each task with its services (a sandbox each, over i6pn) rewarded 1', async () => {
    const sim = await ModalSimulator.start();
    try {
      const caFile = join(root, 'modal-ca.pem');
      await writeFile(caFile, sim.ca);
      const env = { MODAL_SERVER_URL: sim.url, MODAL_TOKEN_ID: sim.tokenId, MODAL_TOKEN_SECRET: sim.tokenSecret, NODE_EXTRA_CA_CERTS: caFile, HOME: root };
      const jobs = join(root, 'jobs');
      const run = await harborRun(TASKS, jobs, 'compose-modal', { backend: 'modal' }, { env });
      expect(outcomes(join(jobs, 'compose-modal')), run.output).toEqual(REWARDS);
    } finally {
      await sim.close();
    }
  }, 600_000);
});
