// Dockerfile builds through Modal's builder (the simulator's): the commands run, a failing step is
// an ImageBuildError naming it, COPY/ADD and multi-stage builds are refused with what to do instead.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CapabilityError, ImageBuildError, ImagePullError, type BuildProgress } from '@berth/core';
import { createModalBackend } from '@berth/backend-modal';
import { ModalSimulator } from './sim/index.js';

const sim = await ModalSimulator.start();
const backend = createModalBackend({
  serverUrl: sim.url,
  ca: sim.ca,
  tokenId: sim.tokenId,
  tokenSecret: sim.tokenSecret,
  probeRegistries: ['127.0.0.1:5000'],
  modalConfigEnv: {},
});
const dirs: string[] = [];
afterAll(async () => {
  await backend.close();
  await sim.close();
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

async function context(dockerfile: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'berth-modal-build-'));
  dirs.push(dir);
  await writeFile(join(dir, 'Dockerfile'), dockerfile);
  return dir;
}
const failure = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error('expected a failure');
    },
    (e: unknown) => e,
  );

describe('Dockerfile builds on Modal (simulated)', () => {
  it("runs the Dockerfile's commands on its base image; the build log arrives as build events", async () => {
    const nonce = randomBytes(4).toString('hex');
    const dir = await context(
      `# a task image\nFROM berth-test/busybox:latest\nENV GREETING=hello\nRUN echo built-${nonce} > /built.txt && \\\n    echo two >> /built.txt\n`,
    );
    const env = backend.environment({ image: { build: { context: dir } } });
    const lines: BuildProgress[] = [];
    env.events.on('build', (p) => lines.push(p));
    try {
      await env.start();
      await expect(env.exec('cat /built.txt; echo $GREETING')).resolves.toMatchObject({ exitCode: 0, stdout: `built-${nonce}\ntwo\nhello\n` });
      expect(lines.length).toBeGreaterThan(0);
      expect(lines.every((l) => l.context === dir)).toBe(true);
    } finally {
      await env.teardown();
    }
  });

  it('a failing step is a permanent ImageBuildError naming the step, with the log tail', async () => {
    const dir = await context(`FROM berth-test/busybox:latest\nRUN echo "needs make" >&2 && exit 3\n`);
    const error = await failure(backend.start({ image: { build: { context: dir } } }));
    expect(ImageBuildError.isInstance(error), String(error)).toBe(true);
    expect(error).toMatchObject({ reason: 'step_failed', category: 'permanent_infra' });
    expect((error as ImageBuildError).step ?? '').toContain('exit 3');
    expect((error as ImageBuildError).logTail).toContain('needs make');
  });

  it('a base image that cannot be pulled is the ImagePullError it is', async () => {
    const dir = await context(`FROM 127.0.0.1:5000/berth/private-busybox:latest\nRUN true\n`);
    const error = await failure(backend.start({ image: { build: { context: dir } } }));
    expect(ImagePullError.isInstance(error), String(error)).toBe(true);
    expect(error).toMatchObject({ reason: 'unauthorized' });
  });

  it('COPY/ADD and multi-stage builds are a CapabilityError that says what to do instead; preflight says so too', async () => {
    for (const dockerfile of ['FROM berth-test/busybox:latest\nCOPY app /app\n', 'FROM berth-test/busybox:latest AS base\nFROM base\nRUN true\n']) {
      const dir = await context(dockerfile);
      const error = await failure(backend.start({ image: { build: { context: dir } } }));
      expect(CapabilityError.isInstance(error), String(error)).toBe(true);
      expect((error as Error).message).toMatch(/bake those files into a base image|multi-stage/);
      const report = await backend.preflight({ image: { build: { context: dir } } });
      expect(report.checks.find((c) => c.name === 'image')).toMatchObject({ status: 'fail' });
    }
  });
});
