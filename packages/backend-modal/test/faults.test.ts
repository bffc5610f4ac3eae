// Each fault the simulator can make, seen through the backend: the class and category berth reports.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import Docker from 'dockerode';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { execInFlight } from '@berth/conformance';
import { BackendAuthError, ImagePullError, SandboxLostError, classifyFailure, type Environment } from '@berth/core';
import { createModalBackend, type ModalBackendOptions } from '@berth/backend-modal';
import { Code, ModalSimulator } from '@berth/test-support/modal-sim';

const sim = await ModalSimulator.start({ longPollMs: 2000 });
const PRIVATE = '127.0.0.1:5000/berth/private-busybox:latest';
const docker = new Docker();
const AUTH = { username: 'berth', password: 'berth-test-secret' };
const envs: Environment[] = [];
const backends: Array<{ close(): Promise<void> }> = [];

function backend(extra: Partial<ModalBackendOptions> = {}) {
  const b = createModalBackend({ ...sim.clientOptions(), ...extra });
  backends.push(b);
  return b;
}
async function started(spec: Parameters<ReturnType<typeof backend>['start']>[0] = { image: 'berth-test/busybox:latest' }, b = backend()): Promise<Environment> {
  const env = await b.start(spec);
  envs.push(env);
  return env;
}
const failure = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error('expected a failure');
    },
    (e: unknown) => e,
  );
/** The sandbox id behind an environment, from the simulator's containers (tagged with berth's labels). */
async function sandboxOf(env: Environment): Promise<string> {
  const out = execFileSync('docker', ['ps', '--filter', `label=modal.tag.berth.environment=${env.id}`, '--format', '{{.Label "berth.modal-sim"}}'])
    .toString()
    .trim();
  expect(out).toMatch(/^sb-/);
  return out;
}

afterEach(async () => {
  await Promise.all(envs.splice(0).map((e) => e.teardown().catch(() => undefined)));
});
afterAll(async () => {
  await Promise.all(backends.map((b) => b.close()));
  await sim.close();
});

describe('Modal faults through the simulator', () => {
  it('a wrong token is BackendAuthError (permanent), at start and in preflight', async () => {
    const wrong = backend({ tokenSecret: 'not-the-secret' });
    const error = await failure(wrong.start({ image: 'berth-test/busybox:latest' }));
    expect(BackendAuthError.isInstance(error), String(error)).toBe(true);
    expect(classifyFailure(error)).toMatchObject({ category: 'permanent_infra' });
    expect(JSON.stringify(error)).not.toContain('not-the-secret');
    expect((await wrong.preflight()).checks[0]).toMatchObject({ name: 'api', status: 'fail' });
  });

  it('a sandbox that vanishes while in use: SandboxLostError on the next exec', async () => {
    const env = await started();
    await sim.faults.vanish(await sandboxOf(env));
    const error = await failure(env.exec('true'));
    expect(SandboxLostError.isInstance(error), String(error)).toBe(true);
  });

  it('an eviction mid-exec (MEMORY_MANAGER_EVICTION): SandboxLostError', async () => {
    const env = await started();
    const { started: inFlight, result: running } = execInFlight(env, 'sleep 30');
    await inFlight;
    await sim.faults.evict(await sandboxOf(env));
    const error = await failure(running);
    expect(SandboxLostError.isInstance(error), String(error)).toBe(true);
    expect((error as SandboxLostError).lastState ?? '').toMatch(/EVICTION|not found|removed/);
  });

  it('a creation rate limit with a retry hint is waited out: the start succeeds after the hint', async () => {
    sim.faults.rateLimit({ count: 2, retryAfterSecs: 0.5 });
    const t0 = Date.now();
    const env = await started();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1000);
    await expect(env.exec('echo ok')).resolves.toMatchObject({ stdout: 'ok\n' });
  });

  it('a stdio stream cut mid-read is resumed from its offset: no byte lost, none repeated', async () => {
    const env = await started();
    const before = sim.faults.stdioReads.length;
    sim.faults.cutStdioAfter(100_000, 'stdout');
    const result = await env.exec('head -c 3000000 /dev/zero | tr "\\0" x; echo; echo end');
    expect(result.exitCode).toBe(0);
    expect(result.stdout.length).toBe(3_000_000 + 1 + 4);
    expect(result.stdout.endsWith('x\nend\n')).toBe(true);
    expect(/^x+$/.test(result.stdout.slice(0, 3_000_000))).toBe(true);
    // The cut hit stdout's first read, and reading resumed exactly where it stopped.
    const stdout = sim.faults.stdioReads.slice(before).filter((r) => r.descriptor === 'stdout');
    expect(stdout.slice(0, 2)).toEqual([
      { descriptor: 'stdout', offset: 0, cutAfter: 100_000 },
      { descriptor: 'stdout', offset: 100_000 },
    ]);
  });

  it('an expired router JWT is refreshed once, invisibly', async () => {
    const env = await started();
    await env.exec('true');
    const before = sim.calls.length;
    sim.faults.expireRouterJwts();
    await expect(env.exec('echo again')).resolves.toMatchObject({ exitCode: 0, stdout: 'again\n' });
    const after = sim.calls.slice(before);
    // The router refused the old token, and berth asked for a new one exactly once.
    expect(after.filter((c) => c.path.startsWith('/modal.task_command_router.') && c.code === Code.UNAUTHENTICATED).length).toBeGreaterThan(0);
    expect(after.filter((c) => /CommandRouterAccess$/.test(c.path))).toHaveLength(1);
  });

  it('a slow long-poll and reset HTTP/2 connections (RST_STREAM, GOAWAY) do not fail a command', async () => {
    const env = await started();
    sim.faults.slowLongPoll(1500);
    await expect(env.exec('echo slow')).resolves.toMatchObject({ stdout: 'slow\n' });
    sim.faults.slowLongPoll(0);
    // Each fault lands once the command runs (its marker arrived), on the exec's calls in flight.
    const goaway = execInFlight(env, 'sleep 1; echo after');
    await goaway.started;
    const sessions = sim.sessionsOpened;
    expect(sim.faults.resetConnections('goaway')).toBeGreaterThan(0);
    await expect(goaway.result).resolves.toMatchObject({ exitCode: 0, stdout: expect.stringMatching(/\nafter\n$/) });
    // New calls went to a new connection: the client took the GOAWAY.
    await expect(env.exec('echo next')).resolves.toMatchObject({ stdout: 'next\n' });
    expect(sim.sessionsOpened).toBeGreaterThan(sessions);

    const rst = execInFlight(env, 'sleep 1; echo rst');
    await rst.started;
    const before = sim.calls.length;
    expect(sim.faults.resetConnections('rst')).toBeGreaterThan(0);
    await expect(rst.result).resolves.toMatchObject({ exitCode: 0, stdout: expect.stringMatching(/\nrst\n$/) });
    // The exec's own calls were among those reset (and were asked again).
    expect(sim.calls.slice(before).filter((c) => c.reset && /\/TaskExec\w+$/.test(c.path)).length).toBeGreaterThan(0);
  });

  it('a container that cannot be loaded (FetchSpec failed) whose image is pullable is transient; one whose image is gone is ImagePullError not_found', async () => {
    sim.faults.fetchSpecFailure(1);
    const error = await failure(backend().start({ image: { ref: PRIVATE, auth: AUTH } }));
    expect(SandboxLostError.isInstance(error), String(error)).toBe(true);
    expect(classifyFailure(error).category).toBe('transient_infra');
    expect((error as Error).message).toMatch(/FetchSpec failed.*pullable/);

    // A private tag pushed for this test, built once, then deleted from the registry.
    const tag = `127.0.0.1:5000/berth/vanishing:${randomBytes(4).toString('hex')}`;
    execFileSync('docker', ['tag', 'berth-test/busybox:latest', tag]);
    const pushed = await docker.getImage(tag).push({ authconfig: { ...AUTH, serveraddress: '127.0.0.1:5000' } });
    await new Promise((resolve, reject) => docker.modem.followProgress(pushed, (error: Error | null) => (error ? reject(error) : resolve(undefined))));
    const b = backend();
    await started({ image: { ref: tag, auth: AUTH } }, b);
    const digest = execFileSync('curl', [
      '-sfI',
      '-u',
      'berth:berth-test-secret',
      '-H',
      'Accept: application/vnd.docker.distribution.manifest.v2+json',
      `http://${tag.replace(/:([^:]+)$/, '').replace('127.0.0.1:5000/', '127.0.0.1:5000/v2/')}/manifests/${tag.split(':').pop()}`,
    ]).toString();
    const ref = /docker-content-digest:\s*(\S+)/i.exec(digest)?.[1];
    execFileSync('curl', ['-sf', '-X', 'DELETE', '-u', 'berth:berth-test-secret', `http://127.0.0.1:5000/v2/berth/vanishing/manifests/${ref}`]);
    execFileSync('docker', ['rmi', tag], { stdio: 'ignore' });
    sim.faults.fetchSpecFailure(1);
    const gone = await failure(b.start({ image: { ref: tag, auth: AUTH } }));
    expect(ImagePullError.isInstance(gone), String(gone)).toBe(true);
    expect(gone).toMatchObject({ reason: 'not_found', category: 'permanent_infra' });
  });
});
