import { chmod, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  CapabilityError,
  ConfigError,
  ImageBuildError,
  ImagePullError,
  describeImage,
  isBuiltImage,
  parseEnvironmentSpec,
  type Capabilities,
  type ImageBuild,
} from '@berth/core';
import { assertSupported, baseImages, buildFailure, buildTag, hashBuildContext, readDockerfile } from '@berth/core/backend-kit';

const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

async function tree(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'berth-ctx-'));
  dirs.push(dir);
  for (const [name, text] of Object.entries(files)) {
    await mkdir(join(dir, name, '..'), { recursive: true });
    await writeFile(join(dir, name), text);
  }
  return dir;
}

const build = (context: string, extra: Partial<ImageBuild> = {}): ImageBuild => ({ context, dockerfile: 'Dockerfile', args: {}, network: 'public', ...extra });

describe('spec: image { build }', () => {
  it('parses the build form with its defaults, and keeps pulls as they were', () => {
    const spec = parseEnvironmentSpec({ image: { build: { context: '/work/task/environment' } } });
    expect(isBuiltImage(spec.image)).toBe(true);
    expect(spec.image).toEqual({ build: { context: '/work/task/environment', dockerfile: 'Dockerfile', args: {}, network: 'public' } });
    expect(describeImage(spec.image)).toBe('built from /work/task/environment');
    expect(describeImage({ build: build('/c', { dockerfile: 'docker/Dockerfile.gpu' }) })).toBe('built from /c (docker/Dockerfile.gpu)');
    expect(parseEnvironmentSpec({ image: 'alpine:3' }).image).toEqual({ ref: 'alpine:3' });
  });

  it.each([
    [{ build: { context: 'relative/dir' } }, 'spec.image.build.context', 'absolute local directory'],
    [{ build: { context: '/c', dockerfile: '../Dockerfile' } }, 'spec.image.build.dockerfile', 'inside the context'],
    [{ build: { context: '/c', timeoutMs: -1 } }, 'spec.image.build.timeoutMs', 'spec.image.build.timeoutMs'],
    [{ build: { context: '/c' }, ref: 'alpine' }, 'spec.image', 'either pulled'],
    [{ build: 'Dockerfile' }, 'spec.image.build', 'must be { context'],
  ])('refuses %j with a message naming the field', (image, path, words) => {
    let error: unknown;
    try {
      parseEnvironmentSpec({ image });
    } catch (e) {
      error = e;
    }
    expect(ConfigError.isInstance(error)).toBe(true);
    expect((error as ConfigError).path).toBe(path);
    expect((error as Error).message).toContain(words);
  });

  it('a backend that cannot build refuses the spec with a CapabilityError saying what to do instead', () => {
    const caps: Capabilities = {
      gpus: false,
      gpuTypes: false,
      networkModes: ['none', 'public'],
      networkSwitch: false,
      networkAllowlist: false,
      imageAuth: [],
      mounts: [],
      imageBuild: false,
      execUser: false,
      tty: false,
      resourceLimits: { cpus: true, memory: true, storage: false },
      snapshot: false,
      services: false,
    };
    const refuse = (input: unknown) => {
      try {
        assertSupported(parseEnvironmentSpec(input), caps, 'example');
      } catch (error) {
        return error;
      }
      return undefined;
    };
    const built = refuse({ image: { build: { context: '/c' } } });
    expect(CapabilityError.isInstance(built) && built.capability).toBe('imageBuild');
    expect((built as Error).message).toContain('build and push the image');
    const switching = refuse({ image: 'a', networkSwitch: true });
    expect(CapabilityError.isInstance(switching) && switching.capability).toBe('networkSwitch');
  });
});

describe('kit: build contexts', () => {
  it('hashes content, modes, links, the Dockerfile path, args and target: the same tree gives the same tag', async () => {
    const files = { Dockerfile: 'FROM alpine\n', 'src/app.py': 'print(1)\n', 'src/run.sh': 'echo\n' };
    const a = await tree(files);
    const b = await tree(files);
    const hash = await hashBuildContext(build(a));
    expect(await hashBuildContext(build(b))).toBe(hash);
    expect(buildTag(hash)).toMatch(/^berth-build:[0-9a-f]{40}$/);

    const changes: Array<[string, () => Promise<unknown>, Partial<ImageBuild>?]> = [
      ['one byte', () => writeFile(join(b, 'src/app.py'), 'print(2)\n')],
      ['a mode', () => chmod(join(b, 'src/run.sh'), 0o755)],
      ['a new empty dir', () => mkdir(join(b, 'empty'))],
      ['a link', () => symlink('app.py', join(b, 'src/link'))],
    ];
    let previous = hash;
    for (const [what, change] of changes) {
      await change();
      const next = await hashBuildContext(build(b));
      expect(next, what).not.toBe(previous);
      previous = next;
    }
    expect(await hashBuildContext(build(a, { args: { V: '1' } }))).not.toBe(hash);
    expect(await hashBuildContext(build(a, { target: 'test' }))).not.toBe(hash);
    expect(await hashBuildContext(build(a, { dockerfile: 'src/app.py' }))).not.toBe(hash);
  });

  it('reads the Dockerfile, or says which field to fix', async () => {
    const dir = await tree({ 'docker/Dockerfile.dev': 'FROM alpine\n' });
    expect(await readDockerfile(build(dir, { dockerfile: 'docker/Dockerfile.dev' }))).toBe('FROM alpine\n');
    const missing = await readDockerfile(build(dir)).catch((e: unknown) => e);
    expect(ConfigError.isInstance(missing) && missing.path).toBe('spec.image.build.dockerfile');
    const noDir = await readDockerfile(build(join(dir, 'nope'))).catch((e: unknown) => e);
    expect(ConfigError.isInstance(noDir) && noDir.path).toBe('spec.image.build.context');
  });

  it('finds the base images of a Dockerfile: ARG defaults and build args substituted, stages and scratch left out', () => {
    const dockerfile = [
      'ARG PY=3.11',
      'ARG REG=docker.io',
      'FROM --platform=linux/amd64 ${REG}/library/python:${PY}-slim AS deps',
      'RUN pip install x',
      'FROM deps AS test',
      'FROM scratch',
      'FROM ghcr.io/org/tool:1 \\',
      '  AS tool',
      'COPY --from=tool /t /t',
    ].join('\n');
    expect(baseImages(dockerfile)).toEqual(['docker.io/library/python:3.11-slim', 'ghcr.io/org/tool:1']);
    expect(baseImages(dockerfile, { PY: '3.12' })).toEqual(['docker.io/library/python:3.12-slim', 'ghcr.io/org/tool:1']);
  });

  it('classifies build failures: a failed step is permanent, the network transient, a FROM that cannot pull is an ImagePullError', () => {
    const ctx = { backend: 'example', build: build('/c'), logTail: 'Step 2/3 : RUN make\nmake: not found' };
    const step = buildFailure("The command '/bin/sh -c make' returned a non-zero code: 127", { ...ctx, step: 'Step 2/3 : RUN make' });
    expect(ImageBuildError.isInstance(step) && [step.reason, step.category, step.step]).toEqual(['step_failed', 'permanent_infra', 'Step 2/3 : RUN make']);
    expect(step.message).toContain('make: not found');

    const network = buildFailure("The command '/bin/sh -c apt-get update' returned a non-zero code: 100", {
      ...ctx,
      logTail: "W: Failed to fetch http://deb.debian.org/debian/dists/bookworm/InRelease  Temporary failure resolving 'deb.debian.org'",
    });
    expect(ImageBuildError.isInstance(network) && [network.reason, network.category, network.retryable]).toEqual(['network', 'transient_infra', true]);

    const invalid = buildFailure('dockerfile parse error line 2: unknown instruction: FROBNICATE', ctx);
    expect(ImageBuildError.isInstance(invalid) && invalid.reason).toBe('invalid');

    const pull = buildFailure("pull access denied for private/base, repository does not exist or may require 'docker login'", {
      ...ctx,
      baseImage: 'private/base:1',
    });
    expect(ImagePullError.isInstance(pull) && [pull.reason, pull.image, pull.operation]).toEqual(['unauthorized', 'private/base:1', 'build']);
  });
});
