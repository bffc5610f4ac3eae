// createRegistryImageBuilder against the real engine and the real registry with auth: build, push,
// reuse what the registry already has, and a refused push as the configuration error it is.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, ImageBuildSchema, type BuildProgress } from '@berth/core';
import { buildTag, hashBuildContext, probeImage } from '@berth/core/backend-kit';
import { createRegistryImageBuilder } from '@berth/backend-docker';
import { parseImageRef } from '@berth/core';

const AUTH = { username: 'berth', password: 'berth-test-secret' };
const REPOSITORY = '127.0.0.1:5000/berth/builder-test';
const docker = new Docker();
const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) {
    const tag = buildTag(await hashBuildContext(ImageBuildSchema.parse({ context: dir })));
    await docker
      .getImage(tag)
      .remove({ force: true })
      .catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  }
});

async function context(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'berth-builder-'));
  dirs.push(dir);
  await writeFile(join(dir, 'Dockerfile'), 'FROM berth-test/busybox:latest\nCOPY nonce /nonce\n');
  await writeFile(join(dir, 'nonce'), randomBytes(8).toString('hex'));
  return dir;
}

function request(dir: string) {
  const lines: BuildProgress[] = [];
  let builds = 0;
  return {
    lines,
    builds: () => builds,
    req: {
      build: ImageBuildSchema.parse({ context: dir, network: 'none' }),
      signal: AbortSignal.timeout(120_000),
      onProgress: (p: BuildProgress) => lines.push(p),
      onBuilding: () => builds++,
      backend: 'k8s',
    },
  };
}

/** What a build of a fresh context with these options rejects with (undefined if it builds). */
async function buildError(options: Parameters<typeof createRegistryImageBuilder>[0]): Promise<unknown> {
  const dir = await context();
  return createRegistryImageBuilder(options)
    .build(request(dir).req)
    .then(
      () => undefined,
      (e: unknown) => e,
    );
}

describe('createRegistryImageBuilder', () => {
  it('builds with the engine and pushes by content hash; a second builder finds it in the registry and builds nothing', async () => {
    const dir = await context();
    const first = request(dir);
    const built = await createRegistryImageBuilder({ repository: REPOSITORY, auth: AUTH }).build(first.req);
    expect(built.ref).toMatch(new RegExp(`^${REPOSITORY}:[0-9a-f]{40}$`));
    expect(built.auth).toEqual(AUTH);
    expect(first.builds()).toBe(1);
    expect((await probeImage(parseImageRef(built.ref), { serverAddress: '127.0.0.1:5000', ...AUTH })).ok).toBe(true);
    // Only the berth-build tag is kept in the engine: the pushed name was a label for the push.
    await expect(docker.getImage(built.ref).inspect()).rejects.toMatchObject({ statusCode: 404 });

    const again = request(dir);
    await expect(createRegistryImageBuilder({ repository: REPOSITORY, auth: AUTH }).build(again.req)).resolves.toEqual(built);
    expect(again.builds()).toBe(0);
    expect(again.lines.map((l) => l.line).join('\n')).toContain('already in the registry');
  });

  it('a push the registry refuses is a ConfigError on the builder’s credentials, without the password in it', async () => {
    const error = await buildError({ repository: REPOSITORY, auth: { username: 'berth', password: 'not-the-password' } });
    expect(ConfigError.isInstance(error), String(error)).toBe(true);
    expect((error as ConfigError).path).toBe('builder.auth');
    expect(JSON.stringify(error)).not.toContain('not-the-password');
  });

  it("a push with no credentials at all (none given, none in Docker's config) is the same ConfigError, not a transient failure", async () => {
    const empty = await mkdtemp(join(tmpdir(), 'berth-no-docker-config-'));
    dirs.push(empty);
    const saved = process.env.DOCKER_CONFIG;
    process.env.DOCKER_CONFIG = empty;
    try {
      const error = await buildError({ repository: REPOSITORY });
      expect(ConfigError.isInstance(error), String(error)).toBe(true);
      expect((error as ConfigError).path).toBe('builder.auth');
    } finally {
      if (saved === undefined) delete process.env.DOCKER_CONFIG;
      else process.env.DOCKER_CONFIG = saved;
    }
  });

  it('refuses a repository with a tag', () => {
    expect(() => createRegistryImageBuilder({ repository: '127.0.0.1:5000/berth/builds:v1' })).toThrow(/without a tag/);
  });
});
