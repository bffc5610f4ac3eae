// A harbor task whose agent starts a server and leaves it running, which the verifier queries later
// (test/fixtures/process-tasks/agent-server), through runHarborJob on Docker, the test cluster and
// the Modal simulator: the oracle gets reward 1 on each, so the agent's background process
// survives the agent's command on every backend, and nothing is left behind.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rm } from 'node:fs/promises';
import { afterAll, expect, it } from 'vitest';
import type { Backend } from '@berth/core';
import { createDockerBackend } from '@berth/backend-docker';
import { createK8sBackend } from '@berth/backend-k8s';
import { createModalBackend } from '@berth/backend-modal';
import { ModalSimulator } from '@berth/test-support/modal-sim';
import { BERTH_KUBECONFIG, NAMESPACE, TOLERATE_FAULT, adminApi } from '@berth/test-support/kube-cluster';
import { runHarborJob } from '@berth/harbor';
import { tempDir } from './support.js';

const TASKS = fileURLToPath(new URL('../../../test/fixtures/process-tasks/', import.meta.url));
const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

async function rewards(backend: Backend, name: string): Promise<Record<string, unknown>> {
  const base = await tempDir(`process-tasks-${name}`);
  dirs.push(base);
  const run = await runHarborJob({ tasksDir: TASKS, backend, jobDir: join(base, 'job') });
  return Object.fromEntries(run.tasks.map((t) => [t.taskId, t.status === 'scored' ? t.outcome?.reward : `${t.status}: ${JSON.stringify(t.failure ?? t)}`]));
}

it('Docker: the agent-server task gets reward 1', { timeout: 120_000 }, async () => {
  expect(await rewards(createDockerBackend(), 'docker')).toEqual({ 'agent-server': 1 });
});

it('the test cluster: the agent-server task gets reward 1; no pod is left', { timeout: 180_000 }, async () => {
  const labels = { 'berth.test': `process-tasks-${Date.now()}` };
  const backend = createK8sBackend({ kubeconfig: { file: BERTH_KUBECONFIG }, namespace: NAMESPACE, tolerations: TOLERATE_FAULT, labels });
  expect(await rewards(backend, 'k8s')).toEqual({ 'agent-server': 1 });
  const pods = await adminApi().listNamespacedPod({ namespace: NAMESPACE, labelSelector: `berth.test=${labels['berth.test']}` });
  expect(pods.items.map((p) => p.metadata?.name)).toEqual([]);
});

it('the Modal simulator: the agent-server task gets reward 1', { timeout: 180_000 }, async () => {
  const sim = await ModalSimulator.start();
  const backend = createModalBackend({ serverUrl: sim.url, ca: sim.ca, tokenId: sim.tokenId, tokenSecret: sim.tokenSecret, modalConfigEnv: {} });
  try {
    expect(await rewards(backend, 'modal')).toEqual({ 'agent-server': 1 });
  } finally {
    await backend.close();
    await sim.close();
  }
});
