// Images built from a Dockerfile, against the real engine and the real private registry.
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, ImageBuildError, ImagePullError, type BuildProgress, type Environment, type EnvironmentPhase } from '@berth/core';
import { buildTag, hashBuildContext } from '@berth/core/backend-kit';
import { createDockerBackend } from '@berth/backend-docker';

const docker = new Docker();
const BASE = 'berth-test/busybox:latest';
const PRIVATE_BASE = '127.0.0.1:5000/berth/private-busybox:build';
const dirs: string[] = [];
const tags = new Set<string>();
const envs: Environment[] = [];

/** A context of its own (a nonce file makes its hash unique), remembered for cleanup. */
async function context(dockerfile: string, files: Record<string, string> = {}): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'berth-build-'));
  dirs.push(dir);
  await writeFile(join(dir, 'Dockerfile'), dockerfile);
  await writeFile(join(dir, '.nonce'), randomBytes(8).toString('hex'));
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
  return dir;
}

async function remember(dir: string, extra: { args?: Record<string, string> } = {}): Promise<string> {
  const tag = buildTag(await hashBuildContext({ context: dir, dockerfile: 'Dockerfile', args: extra.args ?? {}, network: 'none' }));
  tags.add(tag);
  return tag;
}

function failure(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: unknown) => error,
  );
}

afterAll(async () => {
  await Promise.all(envs.map((e) => e.teardown()));
  for (const tag of tags)
    await docker
      .getImage(tag)
      .remove({ force: true })
      .catch(() => undefined);
  await docker
    .getImage(PRIVATE_BASE)
    .remove({ force: true })
    .catch(() => undefined);
  // (The untagged layers of builds that failed part-way go at the end of the run: see test/global-setup.ts.)
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

describe('docker: images built from a Dockerfile', () => {
  it('builds, runs what it built, reports progress, and does not build the same context twice', async () => {
    const dir = await context(`FROM ${BASE}\nARG GREETING=hello\nCOPY data.txt /data.txt\nRUN echo "$GREETING built" > /built.txt\n`, {
      'data.txt': 'from the context',
    });
    const backend = createDockerBackend();
    const spec = { image: { build: { context: dir, args: { GREETING: 'hi' }, network: 'none' as const } }, network: 'none' as const };
    const tag = await remember(dir, { args: { GREETING: 'hi' } });

    const first = backend.environment(spec);
    envs.push(first);
    const phases: EnvironmentPhase[] = [];
    const progress: BuildProgress[] = [];
    first.events.on('phase', (p) => phases.push(p));
    first.events.on('build', (p) => progress.push(p));
    await first.start();
    expect((await first.exec('cat /built.txt /data.txt')).stdout).toBe('hi built\nfrom the context');
    expect(phases).toContain('building');
    expect(progress.some((p) => p.step?.includes('RUN echo'))).toBe(true);
    const info = await docker.getImage(tag).inspect();
    expect(info.Config.Labels).toMatchObject({ 'berth.managed': 'true' });
    expect((await docker.getContainer(first.id).inspect()).Config.Image.endsWith(tag)).toBe(true);

    // The same context again, by a new backend instance: the tag is there, nothing is built.
    const second = createDockerBackend().environment(spec);
    envs.push(second);
    const again: BuildProgress[] = [];
    second.events.on('build', (p) => again.push(p));
    await second.start();
    expect(again).toEqual([]);
    expect((await docker.getImage(tag).inspect()).Id).toBe(info.Id);
    expect((await second.exec('cat /built.txt')).stdout).toBe('hi built\n');
  });

  it('concurrent starts of one context share one build', async () => {
    const dir = await context(`FROM ${BASE}\nRUN sleep 1 && echo once > /once.txt\n`);
    await remember(dir);
    const backend = createDockerBackend();
    const spec = { image: { build: { context: dir, network: 'none' as const } }, network: 'none' as const };
    const pair = [backend.environment(spec), backend.environment(spec)];
    envs.push(...pair);
    const steps = pair.map(() => [] as BuildProgress[]);
    pair.forEach((env, i) => {
      env.events.on('build', (p) => steps[i]!.push(p));
    });
    await Promise.all(pair.map((env) => env.start()));
    // One of them ran the build; the other waited for it.
    const ran = steps.filter((s) => s.some((p) => /^Step 2\/\d+ : RUN sleep 1/.test(p.line)));
    expect(ran).toHaveLength(1);
    expect(steps.flat().some((p) => p.line.startsWith('waiting for a build of the same context'))).toBe(true);
    for (const env of pair) expect((await env.exec('cat /once.txt')).stdout).toBe('once\n');
  });

  it('a failing Dockerfile step is a permanent ImageBuildError naming the step, with the log tail', async () => {
    const dir = await context(`FROM ${BASE}\nRUN echo preparing\nRUN echo "the tests need make" >&2 && exit 3\n`);
    await remember(dir);
    const env = createDockerBackend().environment({ image: { build: { context: dir, network: 'none' } }, network: 'none' });
    envs.push(env);
    const error = await failure(env.start());
    expect(ImageBuildError.isInstance(error)).toBe(true);
    const build = error as ImageBuildError;
    expect(build.reason).toBe('step_failed');
    expect(build.category).toBe('permanent_infra');
    expect(build.retryable).toBe(false);
    // Counted as the Dockerfile's author counts: three steps, not three plus berth's LABEL steps.
    expect(build.step).toMatch(/^Step 3\/3 : RUN echo "the tests need make" >&2 && exit 3$/);
    expect(build.message).toContain('returned a non-zero code: 3');
    expect(build.logTail).toContain('the tests need make');
    expect(env.phase).toBe('failed');
  });

  it('a Dockerfile the builder cannot read is an invalid build; a missing one is a ConfigError naming the field', async () => {
    const dir = await context(`FROM ${BASE}\nFROBNICATE now\n`);
    await remember(dir);
    const invalid = await failure(createDockerBackend().start({ image: { build: { context: dir, network: 'none' } }, network: 'none' }));
    expect(ImageBuildError.isInstance(invalid) && invalid.reason).toBe('invalid');

    const empty = await mkdtemp(join(tmpdir(), 'berth-build-'));
    dirs.push(empty);
    const missing = await failure(createDockerBackend().start({ image: { build: { context: empty } }, network: 'none' }));
    expect(ConfigError.isInstance(missing) && missing.path).toBe('spec.image.build.dockerfile');
    expect((missing as Error).message).toContain(join(empty, 'Dockerfile'));
  });

  it('a base image nobody gave credentials for is an ImagePullError (unauthorized); with credentials the build pulls it', async () => {
    const dir = await context(`FROM ${PRIVATE_BASE}\nRUN echo private > /p.txt\n`);
    await remember(dir);
    const noCreds = await mkdtemp(join(tmpdir(), 'berth-dockercfg-'));
    dirs.push(noCreds);
    const spec = { image: { build: { context: dir, network: 'none' as const } }, network: 'none' as const };
    const error = await failure(createDockerBackend({ dockerConfigEnv: { DOCKER_CONFIG: noCreds } }).start(spec));
    expect(ImagePullError.isInstance(error), String(error)).toBe(true);
    expect((error as ImagePullError).reason).toBe('unauthorized');
    expect((error as ImagePullError).image).toBe(PRIVATE_BASE);

    // The build sends the credentials a pull of the base would use (here a Docker config).
    const withCreds = await mkdtemp(join(tmpdir(), 'berth-dockercfg-'));
    dirs.push(withCreds);
    const auth = Buffer.from('berth:berth-test-secret').toString('base64');
    await writeFile(join(withCreds, 'config.json'), JSON.stringify({ auths: { '127.0.0.1:5000': { auth } } }));
    const env = await createDockerBackend({ dockerConfigEnv: { DOCKER_CONFIG: withCreds } }).start(spec);
    envs.push(env);
    expect((await env.exec('cat /p.txt')).stdout).toBe('private\n');
  });

  it('a build that outlives its timeout is a transient ImageBuildError (timeout)', async () => {
    const dir = await context(`FROM ${BASE}\nRUN sleep 30\n`);
    await remember(dir);
    const started = Date.now();
    const error = await failure(createDockerBackend().start({ image: { build: { context: dir, timeoutMs: 1500, network: 'none' } }, network: 'none' }));
    expect(ImageBuildError.isInstance(error) && error.reason).toBe('timeout');
    expect((error as ImageBuildError).category).toBe('transient_infra');
    expect((error as Error).message).toMatch(/at Step 2\/\d+ : RUN sleep 30/);
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it('preflight says whether the image will be built or is built, and checks the base image', async () => {
    const dir = await context(`FROM ${BASE} AS base\nFROM base\nRUN true\n`);
    await mkdir(join(dir, 'sub'));
    const tag = await remember(dir);
    const backend = createDockerBackend();
    const spec = { image: { build: { context: dir, network: 'none' as const } }, network: 'none' as const };
    const before = await backend.preflight(spec);
    expect(before.ok).toBe(true);
    expect(before.checks.find((c) => c.name === 'image')?.message).toContain(`will be built from ${dir}`);
    expect(before.checks.find((c) => c.name === `base image ${BASE}`)?.status).toBe('ok');
    expect(before.checks.filter((c) => c.name.startsWith('base image'))).toHaveLength(1); // 'base' is a stage
    const env = await backend.start(spec);
    envs.push(env);
    const after = await backend.preflight(spec);
    expect(after.checks.find((c) => c.name === 'image')?.message).toContain(`already built (${tag})`);

    // (An earlier case pulled the private base: without it locally, only the registry can answer.)
    await docker
      .getImage(PRIVATE_BASE)
      .remove({ force: true })
      .catch(() => undefined);
    const privateDir = await context(`FROM ${PRIVATE_BASE}\n`);
    const noCreds = await mkdtemp(join(tmpdir(), 'berth-dockercfg-'));
    dirs.push(noCreds);
    const refused = await createDockerBackend({ dockerConfigEnv: { DOCKER_CONFIG: noCreds } }).preflight({ image: { build: { context: privateDir } } });
    expect(refused.ok).toBe(false);
    expect(refused.checks.find((c) => c.name === `base image ${PRIVATE_BASE}`)?.error?.details).toMatchObject({ reason: 'unauthorized' });
  });
});
