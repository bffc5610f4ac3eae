// sweep() against the real engine: orphans are containers with berth's labels whose owner process is
// dead on this host; live environments are spared; a dry run lists and removes nothing.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { SESSION_ID, type Environment } from '@berth/core';
import { createDockerBackend } from '@berth/backend-docker';

const docker = new Docker();
const BASIC = 'berth-test/busybox:latest';
const started: Environment[] = [];
const made: string[] = [];

afterAll(async () => {
  await Promise.all(started.map((e) => e.teardown()));
  await Promise.all(
    made.map((name) =>
      docker
        .getContainer(name)
        .remove({ force: true })
        .catch(() => undefined),
    ),
  );
});

/** A PID that was just used and has exited: nobody owns it now. */
const deadPid = (): number => Number(spawnSync('sh', ['-c', 'echo $$']).stdout.toString().trim());

/** A running container with berth's labels whose owner process no longer exists on this host. */
async function orphan(session: string): Promise<string> {
  const name = `berth-orphan-${randomBytes(4).toString('hex')}`;
  const container = await docker.createContainer({
    Image: BASIC,
    Cmd: ['sleep', '600'],
    name,
    Labels: {
      'berth.managed': 'true',
      'berth.session': session,
      'berth.environment': 'orphan',
      'berth.created': String(Date.now()),
      'berth.owner-pid': String(deadPid()),
      'berth.owner-host': hostname(),
    },
    HostConfig: { NetworkMode: 'none' },
  });
  made.push(name);
  await container.start();
  return name;
}

/** Whether the engine still has the container, running or not: false only on its 404. */
async function exists(name: string): Promise<boolean> {
  return docker
    .getContainer(name)
    .inspect()
    .then(
      () => true,
      (error: { statusCode?: number }) => {
        if (error.statusCode === 404) return false;
        throw error;
      },
    );
}

const running = async (name: string): Promise<boolean> => (await docker.getContainer(name).inspect()).State.Running;

describe('docker sweep', () => {
  it('removes containers of dead owners and spares live ones', async () => {
    const backend = createDockerBackend();
    const live = await backend.start({ image: BASIC, network: 'none' });
    started.push(live);
    const name = await orphan(SESSION_ID);
    expect(await exists(name)).toBe(true);
    const report = await backend.sweep({ session: SESSION_ID });
    expect(report.failed).toEqual([]);
    expect(report.removed).toEqual([name]);
    expect(await exists(name)).toBe(false);
    expect(report.dryRun).toBeUndefined();
    expect(report.wouldRemove).toBeUndefined();
    expect(live.phase).toBe('running');
    expect((await live.exec('true')).exitCode).toBe(0);
    await live.teardown();
  });

  it('a dry run lists the orphans and removes nothing; a real sweep then removes them', async () => {
    const backend = createDockerBackend();
    // A session of its own: test files running in parallel sweep theirs, never this one.
    const session = `sweep-dry-${randomBytes(4).toString('hex')}`;
    const name = await orphan(session);
    const dry = await backend.sweep({ session, dryRun: true });
    expect(dry).toEqual({ backend: 'docker', removed: [], failed: [], dryRun: true, wouldRemove: [name] });
    expect(await running(name)).toBe(true);

    // Even what olderThanMs: 0 would take (every container, live owners' too) is only listed.
    const live = await backend.start({ image: BASIC, network: 'none' });
    started.push(live);
    const all = await backend.sweep({ session: SESSION_ID, olderThanMs: 0, dryRun: true });
    expect(all.wouldRemove).toContain(live.id);
    expect(all.removed).toEqual([]);
    expect((await live.exec('echo still-here')).stdout).toBe('still-here\n');

    const real = await backend.sweep({ session });
    expect(real).toEqual({ backend: 'docker', removed: [name], failed: [] });
    expect(await exists(name)).toBe(false);
    await live.teardown();
  });
});
