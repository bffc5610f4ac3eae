// An agent runtime the older task image lacks, mounted from its own (private) image into the task's
// sandbox, read-only, the way a cluster run mounts it; the agent runs from the mount and the task
// scores as it would there (field report 001 in ../shared/seeds/, on the local engine).
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { createDockerBackend } from '@berth/backend-docker';
import { runHarborJob } from '@berth/harbor';
import { tempDir, writeTask } from './support.js';

// Its own tag: image-mounts.test.ts removes and re-pulls :mounts in parallel.
const RUNTIME = '127.0.0.1:5000/berth/private-busybox:seed-001';
const MOUNT = '/opt/custom-agent-runtime/oh-sdk';
const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

describe('an agent runtime mounted into an older task image, on Docker', () => {
  it('the agent runs from the runtime image mounted read-only; the task scores 1', { timeout: 120_000 }, async () => {
    await new Docker()
      .getImage(RUNTIME)
      .remove({ force: true })
      .catch(() => undefined);
    const root = await tempDir('seed-001');
    dirs.push(root);
    await writeTask(join(root, 'tasks'), 'runtime-task', { solve: null });
    const seen: string[] = [];
    const run = await runHarborJob({
      tasksDir: join(root, 'tasks'),
      jobDir: join(root, 'job'),
      backend: createDockerBackend(),
      // What the cluster run gets from agent_runtime_image / _mount_path / _image_subpath.
      specOverrides: {
        mounts: [{ type: 'image', image: { ref: RUNTIME, auth: { username: 'berth', password: 'berth-test-secret' } }, subpath: 'bin', target: MOUNT }],
      },
      agent: async (env) => {
        // The runtime's own interpreter, from the mount.
        const r = await env.exec([`${MOUNT}/sh`, '-c', 'mkdir -p /app && echo solved > /app/done && echo ran']);
        seen.push(r.stdout);
        const write = await env.exec(`touch ${MOUNT}/changed 2>&1`);
        seen.push(write.exitCode === 0 ? 'writable' : 'read-only');
      },
    });
    expect(seen).toEqual(['ran\n', 'read-only']);
    expect(run.tasks).toEqual([expect.objectContaining({ taskId: 'runtime-task', status: 'scored', outcome: expect.objectContaining({ reward: 1 }) })]);
  });
});
