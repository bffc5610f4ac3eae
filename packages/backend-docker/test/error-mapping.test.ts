// Every Docker failure berth maps, triggered for real against the engine and the registry.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { execInFlight } from '@berth/conformance';
import {
  BackendUnavailableError,
  BerthError,
  ConfigError,
  ImagePullError,
  SESSION_ID,
  SandboxLostError,
  StartupTimeoutError,
  TransferError,
  classifyFailure,
  type Environment,
  type PullProgress,
} from '@berth/core';
import { createDockerBackend } from '@berth/backend-docker';
import { startFakeRegistry } from '@berth/test-support/fake-registry';

const docker = new Docker();
// Its own tag: the conformance suite removes and re-pulls :latest in parallel with this file.
const PRIVATE = '127.0.0.1:5000/berth/private-busybox:errors';
const GOOD_AUTH = { username: 'berth', password: 'berth-test-secret' };
const BASIC = 'berth-test/busybox:latest';
const started: Environment[] = [];

async function forget(ref: string): Promise<void> {
  await docker
    .getImage(ref)
    .remove({ force: true })
    .catch(() => undefined);
}

async function failure(promise: Promise<unknown>): Promise<BerthError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(BerthError.isInstance(error), `expected a BerthError, got ${String(error)}`).toBe(true);
  return error as BerthError;
}

/** The containers the engine has for an environment, stopped ones included. */
async function containersOf(id: string): Promise<string[]> {
  return (await docker.listContainers({ all: true, filters: { label: [`berth.environment=${id}`] } })).map((c) => c.Names[0] ?? c.Id);
}

afterAll(async () => {
  await Promise.all(started.map((e) => e.teardown()));
  // This process's containers: other test files may run in parallel within the same session.
  const left = await docker.listContainers({ all: true, filters: { label: [`berth.session=${SESSION_ID}`, `berth.owner-pid=${process.pid}`] } });
  expect(left.map((c) => c.Names[0])).toEqual([]);
});

describe('docker error mapping', () => {
  it('daemon unreachable -> BackendUnavailableError, for start and preflight', async () => {
    const backend = createDockerBackend({ socketPath: '/tmp/berth-no-such-docker.sock' });
    const error = await failure(backend.start({ image: BASIC }));
    expect(BackendUnavailableError.isInstance(error)).toBe(true);
    expect(error.category).toBe('transient_infra');
    expect(error.message).toContain('unreachable');
    // Where it looked: the socket named, so a wrong path is seen at once.
    expect(error.message).toContain('at /tmp/berth-no-such-docker.sock');
    const report = await backend.preflight({ image: BASIC });
    expect(report.ok).toBe(false);
    expect(report.checks[0]).toMatchObject({ name: 'daemon', status: 'fail', error: { type: 'BackendUnavailableError' } });
  });

  it('wrong registry password -> ImagePullError unauthorized, password nowhere in the error', async () => {
    await forget(PRIVATE);
    const backend = createDockerBackend();
    const error = await failure(backend.start({ image: { ref: PRIVATE, auth: { username: 'berth', password: 'not-the-password-123' } }, network: 'none' }));
    expect(ImagePullError.isInstance(error)).toBe(true);
    expect((error as ImagePullError).reason).toBe('unauthorized');
    expect(error.category).toBe('permanent_infra');
    expect(error.retryable).toBe(false);
    expect(error.message).toContain('rejected the credentials');
    expect(JSON.stringify(error.toJSON())).not.toContain('not-the-password-123');
    expect(error.message).not.toContain('not-the-password-123');
  });

  it('an anonymous pull of a private image says so, in the same words as preflight (no misleading "HTTP code 500 server error")', async () => {
    await forget(PRIVATE);
    const noCredentials = await mkdtemp(join(tmpdir(), 'berth-nocreds-'));
    try {
      const backend = createDockerBackend({ dockerConfigEnv: { DOCKER_CONFIG: noCredentials } });
      const error = await failure(backend.start({ image: PRIVATE, network: 'none' }));
      expect(error).toMatchObject({ type: 'ImagePullError', reason: 'unauthorized' });
      expect(error.message).not.toMatch(/HTTP code|server error/);
      expect(error.message).toContain('no credentials were found for this registry');
      const check = (await backend.preflight({ image: PRIVATE })).checks.find((c) => c.name === 'image');
      const words = (m: string) => m.replace(/^pulling \S+ failed: /, '').replace(/Head "[^"]*"|Get "[^"]*"/g, '<url>');
      expect(words(check!.message)).toBe(words(error.message));
    } finally {
      await rm(noCredentials, { recursive: true });
    }
  });

  it('manifest unknown -> ImagePullError not_found', async () => {
    const error = await failure(createDockerBackend().start({ image: { ref: '127.0.0.1:5000/berth/private-busybox:no-such-tag', auth: GOOD_AUTH } }));
    expect(error).toMatchObject({ type: 'ImagePullError', reason: 'not_found', category: 'permanent_infra' });
  });

  it('registry unreachable -> transient ImagePullError', async () => {
    const error = await failure(createDockerBackend().start({ image: '127.0.0.1:1/berth/nothing:here' }));
    expect(error).toMatchObject({ type: 'ImagePullError', reason: 'transient', category: 'transient_infra', retryable: true });
  });

  it('registry 5xx -> transient ImagePullError', async () => {
    const registry = await startFakeRegistry('server-error');
    try {
      const error = await failure(createDockerBackend().start({ image: `${registry.host}/x/y:1` }));
      expect(error).toMatchObject({ type: 'ImagePullError', reason: 'transient', category: 'transient_infra' });
      expect(error.message).toContain('503');
      expect(registry.requests.some((r) => r.includes('/manifests/'))).toBe(true);
    } finally {
      await registry.close();
    }
  });

  it('registry 429 -> rate_limited, transient', async () => {
    const registry = await startFakeRegistry('rate-limited');
    try {
      const error = await failure(createDockerBackend().start({ image: `${registry.host}/x/y:1` }));
      expect(error).toMatchObject({ type: 'ImagePullError', reason: 'rate_limited', retryable: true });
    } finally {
      await registry.close();
    }
  });

  it('a stalled pull -> StartupTimeoutError naming what it was doing, nothing left behind', async () => {
    const registry = await startFakeRegistry('stall');
    try {
      const t0 = Date.now();
      const env = createDockerBackend().environment({ image: `${registry.host}/x/y:1`, timeouts: { startupMs: 1500 } });
      const error = await failure(env.start());
      expect(StartupTimeoutError.isInstance(error)).toBe(true);
      expect((error as StartupTimeoutError).lastStatus).toContain('pulling');
      expect(Date.now() - t0).toBeLessThan(10_000);
      expect(classifyFailure(error)).toMatchObject({ category: 'transient_infra', type: 'StartupTimeoutError' });
      // The probe finds a live sandbox's container in the stopped-container test below.
      expect(await containersOf(env.id)).toEqual([]);
    } finally {
      await registry.close();
    }
  });

  it('invalid spec -> ConfigError before any I/O (even with no daemon)', async () => {
    const backend = createDockerBackend({ socketPath: '/tmp/berth-no-such-docker.sock' });
    expect(() => backend.environment({ image: 'x', resources: { cpus: 0 } })).toThrow(ConfigError);
    expect(() => backend.environment({ image: 'Not A Ref' })).toThrow(/Invalid image reference/);
    expect(() => backend.environment({ image: 'x', resources: { gpus: 1, gpuTypes: ['H100'] } })).toThrow(/cannot choose the GPU model/);
    expect(() => backend.environment({ image: { ref: 'x', auth: { secretName: 'nope' } } })).toThrow(/registrySecrets/);
  });

  it('a container removed from outside during exec -> SandboxLostError within seconds', async () => {
    const env = await createDockerBackend().start({ image: BASIC, network: 'none' });
    started.push(env);
    const lost: string[] = [];
    env.events.on('lost', (reason) => lost.push(reason));
    const t0 = Date.now();
    // Removed once the command surely runs (its marker arrived), not after a guessed pause.
    const { started: inFlight, result } = execInFlight(env, 'sleep 60');
    await inFlight;
    await docker.getContainer(env.id).remove({ force: true });
    const error = await failure(result);
    expect(SandboxLostError.isInstance(error)).toBe(true);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(env.phase).toBe('lost');
    expect(lost.length).toBe(1);
    // and the next download is a TransferError whose category comes from the loss
    const dir = await mkdtemp(join(tmpdir(), 'berth-'));
    const download = await failure(env.downloadFile('/etc/passwd', join(dir, 'x')));
    expect(TransferError.isInstance(download)).toBe(true);
    expect(download.category).toBe('transient_infra');
    expect(SandboxLostError.isInstance(download.cause)).toBe(true);
    await rm(dir, { recursive: true });
    await env.teardown();
  });

  it('a stopped (not removed) container: uploads do not land in its filesystem', async () => {
    const env = await createDockerBackend().start({ image: BASIC, network: 'none' });
    started.push(env);
    expect(await containersOf(env.id)).toHaveLength(1);
    await docker.getContainer(env.id).kill();
    const dir = await mkdtemp(join(tmpdir(), 'berth-'));
    await writeFile(join(dir, 'f'), 'x');
    const error = await failure(env.uploadFile(join(dir, 'f'), '/tmp/f'));
    expect(error).toMatchObject({ type: 'TransferError', reason: 'sandbox_lost', category: 'transient_infra' });
    expect((error as TransferError).cause).toMatchObject({ type: 'SandboxLostError' });
    // Asked of the engine: its archive API reads a stopped container's files (/etc/passwd is
    // there), and /tmp/f is not among them.
    await expect(docker.getContainer(env.id).getArchive({ path: '/etc/passwd' })).resolves.toBeDefined();
    await expect(docker.getContainer(env.id).getArchive({ path: '/tmp/f' })).rejects.toMatchObject({ statusCode: 404 });
    await rm(dir, { recursive: true });
    await env.teardown();
  });
});

describe('docker pulls and credentials', () => {
  it('pulls through Docker config credentials and reports progress, without the password in events', async () => {
    await forget(PRIVATE);
    const dir = await mkdtemp(join(tmpdir(), 'berth-dockercfg-'));
    const auth = Buffer.from(`${GOOD_AUTH.username}:${GOOD_AUTH.password}`).toString('base64');
    await writeFile(join(dir, 'config.json'), JSON.stringify({ auths: { '127.0.0.1:5000': { auth } } }));
    const backend = createDockerBackend({ dockerConfigEnv: { DOCKER_CONFIG: dir } });
    const env = backend.environment({ image: PRIVATE, network: 'none' });
    started.push(env);
    const progress: PullProgress[] = [];
    const phases: string[] = [];
    env.events.on('pull', (p) => progress.push(p));
    env.events.on('phase', (p) => phases.push(p));
    await env.start();
    expect(phases).toEqual(['pulling', 'starting', 'running']);
    expect(progress.length).toBeGreaterThan(0);
    expect(JSON.stringify(progress)).not.toContain(GOOD_AUTH.password);
    expect((await env.exec('echo ok')).stdout).toBe('ok\n');
    await env.teardown();
    await rm(dir, { recursive: true });
  });

  it("mirror rules carry their own credentials; the spec's are never sent to another host", async () => {
    await forget(PRIVATE);
    const noCredentials = await mkdtemp(join(tmpdir(), 'berth-nocreds-'));
    // seed 000: docker.io/swebench/* rewritten to a local mirror
    const mirrors = [{ from: 'docker.io/mirrored/', to: '127.0.0.1:5000/berth/' }];
    const specAuth = { username: 'berth', password: GOOD_AUTH.password };
    // Credentials written for docker.io do not follow the pull to the mirror...
    const leaked = await failure(
      createDockerBackend({ mirrors, dockerConfigEnv: { DOCKER_CONFIG: noCredentials } }).start({
        image: { ref: 'docker.io/mirrored/private-busybox:errors', auth: specAuth },
        network: 'none',
      }),
    );
    expect(leaked).toMatchObject({ type: 'ImagePullError', reason: 'unauthorized' });
    // ...the rule's own (here a named secret) do.
    const backend = createDockerBackend({
      registrySecrets: { 'local-registry': GOOD_AUTH },
      mirrors: [{ ...mirrors[0]!, auth: { secretName: 'local-registry' } }],
      dockerConfigEnv: { DOCKER_CONFIG: noCredentials },
    });
    const env = await backend.start({ image: { ref: 'docker.io/mirrored/private-busybox:errors', auth: specAuth }, network: 'none' });
    started.push(env);
    expect((await env.exec(['cat', '/etc/passwd'])).stdout).toContain('root');
    await env.teardown();
    await rm(noCredentials, { recursive: true });
  });

  it('named registry secrets', async () => {
    await forget(PRIVATE);
    const backend = createDockerBackend({ registrySecrets: { 'local-registry': GOOD_AUTH } });
    const env = await backend.start({ image: { ref: PRIVATE, auth: { secretName: 'local-registry' } }, network: 'none' });
    started.push(env);
    expect((await env.exec('echo ok')).stdout).toBe('ok\n');
    await env.teardown();
  });

  it('pullPolicy never refuses a missing image as not_found', async () => {
    await forget(PRIVATE);
    const error = await failure(createDockerBackend({ pullPolicy: 'never' }).start({ image: PRIVATE }));
    expect(error).toMatchObject({ type: 'ImagePullError', reason: 'not_found' });
  });
});

describe('docker preflight follows the pull policy', () => {
  it("'never' fails for an absent image; 'always' asks the registry even when it is present", async () => {
    await forget(PRIVATE);
    const never = await createDockerBackend({ pullPolicy: 'never' }).preflight({ image: PRIVATE });
    expect(never.ok).toBe(false);
    expect(never.checks.find((c) => c.name === 'image')).toMatchObject({ status: 'fail', error: { type: 'ImagePullError', details: { reason: 'not_found' } } });
    // Present locally (berth-test/busybox is), but 'always' pulls, so the registry must be asked.
    await docker.getImage(BASIC).tag({ repo: '127.0.0.1:5000/berth/private-busybox', tag: 'errors' });
    const noCredentials = await mkdtemp(join(tmpdir(), 'berth-nocreds-'));
    const always = await createDockerBackend({ pullPolicy: 'always', dockerConfigEnv: { DOCKER_CONFIG: noCredentials } }).preflight({ image: PRIVATE });
    await rm(noCredentials, { recursive: true });
    expect(always.checks.find((c) => c.name === 'image')).toMatchObject({
      status: 'fail',
      error: { type: 'ImagePullError', details: { reason: 'unauthorized' } },
    });
    const ifMissing = await createDockerBackend().preflight({ image: PRIVATE });
    expect(ifMissing.ok).toBe(true);
    await forget(PRIVATE);
  });
});
