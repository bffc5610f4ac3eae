// Docker snapshots on the real engine: a committed, labelled local image, found by sweep once it is
// an orphan, and a warm pool started from one.
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { LABEL_MANAGED, LABEL_OWNER_PID, LABEL_SNAPSHOT_OF, type Environment } from '@berth/core';
import { createDockerBackend } from '@berth/backend-docker';

const docker = new Docker();
const envs: Environment[] = [];
afterAll(async () => {
  await Promise.all(envs.map((e) => e.teardown()));
});

describe('docker snapshots', () => {
  it("commit makes a local image labelled with berth's labels and the source; sweep of this process removes one never removed", async () => {
    const backend = createDockerBackend();
    const env = await backend.start({ image: 'berth-test/busybox:latest', network: 'none' });
    envs.push(env);
    await env.exec('echo kept > /kept');
    const snapshot = await env.snapshot();
    expect(snapshot.ref).toMatch(new RegExp(`^berth-snapshot\\.invalid/docker/${env.id}:[0-9a-f]{12}$`));
    const image = await docker.getImage(snapshot.ref).inspect();
    expect(image.Config.Labels).toMatchObject({ [LABEL_MANAGED]: 'true', [LABEL_SNAPSHOT_OF]: env.id, [LABEL_OWNER_PID]: String(process.pid) });
    // The container was paused while read and runs on.
    expect((await docker.getContainer(env.id).inspect()).State.Status).toBe('running');

    const dry = await backend.sweep({ ownedByThisProcess: true, dryRun: true });
    expect(dry.wouldRemove).toContain(`image/${snapshot.ref}`);
    await env.teardown();
    const swept = await backend.sweep({ ownedByThisProcess: true });
    expect(swept.failed).toEqual([]);
    expect(swept.removed).toContain(`image/${snapshot.ref}`);
    await expect(docker.getImage(snapshot.ref).inspect()).rejects.toMatchObject({ statusCode: 404 });
    await snapshot.remove(); // already gone: fine
  });

  it('a warm pool of a snapshot starts every sandbox from it; removing the snapshot after the pool closed leaves nothing', async () => {
    const backend = createDockerBackend();
    const env = await backend.start({ image: 'berth-test/busybox:latest', network: 'none' });
    envs.push(env);
    await env.exec('mkdir -p /opt && echo ready > /opt/setup-done');
    const snapshot = await env.snapshot();
    await env.teardown();
    const pool = backend.pool({ image: snapshot.ref, network: 'none' }, { size: 2 });
    try {
      await pool.fill();
      const claimed = await pool.claim();
      envs.push(claimed);
      expect((await claimed.exec('cat /opt/setup-done')).stdout).toBe('ready\n');
      await claimed.teardown();
    } finally {
      await pool.close();
    }
    await snapshot.remove();
    await expect(docker.getImage(snapshot.ref).inspect()).rejects.toMatchObject({ statusCode: 404 });
  });

  it('a snapshot removed while a sandbox runs from it is untagged; sweep takes the untagged image once that sandbox is gone, without a failure', async () => {
    const backend = createDockerBackend();
    const env = await backend.start({ image: 'berth-test/busybox:latest', network: 'none' });
    envs.push(env);
    const snapshot = await env.snapshot();
    const id = (await docker.getImage(snapshot.ref).inspect()).Id;
    const copy = await backend.start({ image: snapshot.ref, network: 'none' });
    envs.push(copy);
    await snapshot.remove();
    await expect(docker.getImage(snapshot.ref).inspect()).rejects.toMatchObject({ statusCode: 404 });
    // Still there by id while the copy runs: a sweep now leaves it without calling it a failure.
    expect((await docker.getImage(id).inspect()).Id).toBe(id);
    await env.teardown();
    const during = await backend.sweep({ ownedByThisProcess: true });
    expect(during.failed).toEqual([]);
    await copy.teardown();
    const after = await backend.sweep({ ownedByThisProcess: true });
    expect(after.failed).toEqual([]);
    await expect(docker.getImage(id).inspect()).rejects.toMatchObject({ statusCode: 404 });
  });
});
