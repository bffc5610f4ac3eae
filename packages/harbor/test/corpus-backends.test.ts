// Every loadable task of the corpus (48 real task.toml files by other people) on every backend:
// each backend accepts every task its engine can run, and refuses only what its engine cannot do,
// by name. Acceptance is backend.environment(spec), which validates without I/O; the runs
// themselves are the conformance suites' and corpus-e2e's business.
import { cp, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BerthError, type Backend } from '@berth/core';
import { createDockerBackend, createRegistryImageBuilder } from '@berth/backend-docker';
import { createK8sBackend } from '@berth/backend-k8s';
import { createModalBackend } from '@berth/backend-modal';
import { buildSpec, loadHarborTask, type HarborTask } from '@berth/harbor';
import { addStepInstructions } from './support.js';

const CORPUS = fileURLToPath(new URL('../../../test/fixtures/harbor-corpus/', import.meta.url));
/** Host variables for every ${VAR} the corpus names (no value is real). */
const host = new Proxy({} as Record<string, string>, { get: (_, name) => `corpus-${String(name)}` });

/**
 * What each backend refuses, task by task, and the capability it names: only what the engine
 * cannot do. Docker picks GPUs by count, never by model.
 */
const REFUSED: Record<string, Record<string, string>> = {
  docker: {
    '26-posttrainbench-gpu-volumes-separate': 'gpuTypes',
    '27-posttrainbench-gpu-dup-types-old': 'gpuTypes',
    '32-tapt-gpu-types-stray-key': 'gpuTypes',
  },
  k8s: {},
  // Per-phase networks (06, 33) switch through the router's TaskSetNetworkAccess; compose services
  // (01, 04: built, so their Dockerfiles' CMD is what Modal runs) each as a sandbox over i6pn.
  modal: {},
};

let work: string;
const tasks: HarborTask[] = [];
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'berth-corpus-backends-'));
  for (const name of (await readdir(CORPUS)).filter((n) => /^\d\d-/.test(n)).sort()) {
    await cp(join(CORPUS, name), join(work, name), { recursive: true });
    await mkdir(join(work, name, 'tests'), { recursive: true });
    await writeFile(join(work, name, 'tests', 'test.sh'), '#!/bin/sh\n');
    await addStepInstructions(join(work, name));
    // Tasks harbor itself would not run (compose, no image) are corpus.unit.test.ts's business; multi-step ones get their step instructions.
    const task = await loadHarborTask(join(work, name), { hostEnv: host }).catch(() => undefined);
    if (task) tasks.push(task);
  }
});
afterAll(() => rm(work, { recursive: true, force: true }));

const backends: Backend[] = [
  createDockerBackend(),
  // A cluster builds Dockerfiles through a registry it pulls from; no I/O happens here.
  createK8sBackend({
    kubeconfig: { file: '/var/lib/berth-kube/berth.kubeconfig' },
    builder: createRegistryImageBuilder({ repository: '127.0.0.1:5000/berth/builds' }),
  }),
  createModalBackend({ tokenId: 'ak-corpus', tokenSecret: 'as-corpus', modalConfigEnv: {} }),
];

describe('the corpus on every backend', () => {
  it('has the tasks harbor runs (the rest are refused at load)', () => {
    // 37 single-container ones, and 3 compose tasks harbor's docker environment runs (09's .yml it ignores).
    expect(tasks.length).toBe(40);
  });

  for (const backend of backends) {
    it(`${backend.name} accepts every task its engine can run, and refuses the rest naming the capability`, () => {
      const refused: Record<string, string> = {};
      for (const task of tasks) {
        try {
          backend.environment(buildSpec(task, backend, undefined, host).spec);
        } catch (error) {
          expect(BerthError.isInstance(error), `${task.id}: ${String(error)}`).toBe(true);
          refused[task.id] = (error as { capability?: string }).capability ?? `${(error as Error).name}: ${(error as Error).message}`;
        }
      }
      expect(refused).toEqual(REFUSED[backend.name]);
    });
  }
});
