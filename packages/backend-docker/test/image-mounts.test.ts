// Image mounts on Docker (the conformance suite's mounts cases run too): the mounted image pulled
// with its own credentials, its directory copied into a berth-labelled volume mounted read-only,
// the volume removed with the sandbox and found by sweep when its owner is gone.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { ImagePullError, type Environment } from '@berth/core';
import { createDockerBackend } from '@berth/backend-docker';

const docker = new Docker();
// Its own tag: other files remove and re-pull theirs in parallel.
const PRIVATE = '127.0.0.1:5000/berth/private-busybox:mounts';
const AUTH = { username: 'berth', password: 'berth-test-secret' };
const BASIC = 'berth-test/busybox:latest';
const envs: Environment[] = [];
const volumes: string[] = [];
afterAll(async () => {
  await Promise.all(envs.map((e) => e.teardown()));
  for (const name of volumes)
    await docker
      .getVolume(name)
      .remove()
      .catch(() => undefined);
});

const forget = (ref: string) =>
  docker
    .getImage(ref)
    .remove({ force: true })
    .catch(() => undefined);
const volumesOf = async (id: string) => (await docker.listVolumes({ filters: { label: [`berth.environment=${id}`] } })).Volumes ?? [];
const containersOf = (id: string) => docker.listContainers({ all: true, filters: { label: [`berth.environment=${id}`] } });

describe('Docker image mounts', () => {
  it('a private image mounted with its own credentials: its directory read-only at the target, in a labelled volume removed with the sandbox', async () => {
    await forget(PRIVATE);
    const env = await createDockerBackend().start({
      image: BASIC,
      mounts: [{ type: 'image', image: { ref: PRIVATE, auth: AUTH }, subpath: 'bin', target: '/opt/runtime' }],
    });
    envs.push(env);
    expect((await env.exec(['/opt/runtime/sh', '-c', 'echo runtime'])).stdout).toBe('runtime\n');
    expect((await env.exec('touch /opt/runtime/x 2>&1')).stdout).toMatch(/read-only/i);
    const [volume, ...more] = await volumesOf(env.id);
    expect(more).toEqual([]);
    expect(volume?.Labels).toMatchObject({ 'berth.managed': 'true', 'berth.image-mount': '/opt/runtime' });
    // The copying container is gone once the sandbox runs: only the sandbox's own container is left.
    expect((await containersOf(env.id)).map((c) => c.Names[0])).toEqual([`/${env.id}`]);

    await env.teardown();
    expect(await volumesOf(env.id)).toEqual([]);
    expect(await containersOf(env.id)).toEqual([]);
  });

  it('without the credentials the mount image fails preflight and start (an ImagePullError naming it), and nothing is left', async () => {
    await forget(PRIVATE);
    const spec = { image: BASIC, mounts: [{ type: 'image' as const, image: PRIVATE, target: '/opt/runtime' }] };
    const report = await createDockerBackend().preflight(spec);
    expect(report.checks.filter((c) => c.name === 'image').map((c) => c.status)).toEqual(['ok', 'fail']);
    const env = createDockerBackend().environment(spec);
    envs.push(env);
    const error = await env.start().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(ImagePullError.isInstance(error), String(error)).toBe(true);
    expect(error).toMatchObject({ reason: 'unauthorized', image: PRIVATE });
    expect(await volumesOf(env.id)).toEqual([]);
    expect(await containersOf(env.id)).toEqual([]);
  });

  it('an image mount whose owner died is swept: the volume, as the container it belonged to', async () => {
    const session = `mounts-${randomBytes(4).toString('hex')}`;
    const deadPid = Number(spawnSync('sh', ['-c', 'echo $$']).stdout.toString().trim());
    const name = `berth-orphan-${randomBytes(4).toString('hex')}-mount-0`;
    volumes.push(name);
    await docker.createVolume({
      Name: name,
      Labels: {
        'berth.managed': 'true',
        'berth.session': session,
        'berth.environment': 'orphan',
        'berth.created': String(Date.now()),
        'berth.owner-pid': String(deadPid),
        'berth.owner-host': hostname(),
        'berth.image-mount': '/opt/runtime',
      },
    });
    const backend = createDockerBackend();
    expect((await backend.sweep({ session, dryRun: true })).wouldRemove).toEqual([`volume/${name}`]);
    const report = await backend.sweep({ session });
    expect(report).toMatchObject({ removed: [`volume/${name}`], failed: [] });
    expect((await docker.listVolumes({ filters: { name: [name] } })).Volumes ?? []).toEqual([]);
  });
});
