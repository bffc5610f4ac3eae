// harbor compose tasks (environment/docker-compose.yaml) through runHarborJob on Docker, unchanged:
// three tasks shaped like real ones (test/fixtures/compose-tasks: the cookbook's API server built
// from a subdirectory and awaited healthy; a database with a one-shot migration main waits for; a
// mock API reached by a network alias, configured by interpolated variables), each rewarded 1 by
// the oracle, nothing left behind.
import { cp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { createDockerBackend } from '@berth/backend-docker';
import { runHarborJob } from '@berth/harbor';
import { removeBuiltImages, tempDir } from './support.js';

const FIXTURES = fileURLToPath(new URL('../../../test/fixtures/compose-tasks/', import.meta.url));
const dirs: string[] = [];
let tasks: string;
afterAll(async () => {
  await removeBuiltImages([
    join(tasks, 'api-healthy', 'environment'),
    join(tasks, 'api-healthy', 'environment', 'api-server'),
    join(tasks, 'db-migrate', 'environment', 'db'),
  ]);
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

describe('harbor compose tasks on Docker', () => {
  it('each runs with its services and the oracle gets reward 1; no container or network is left', { timeout: 300_000 }, async () => {
    const base = await tempDir('compose');
    dirs.push(base);
    tasks = join(base, 'tasks');
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
