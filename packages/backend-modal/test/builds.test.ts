// Dockerfile builds through Modal's builder (the simulator's): the commands run, COPY and ADD read
// the context uploaded as Modal's SDK uploads it (files put by sha256, then a mount of them), a
// failing step is an ImageBuildError naming it, multi-stage builds are refused with what to do instead.
import { chmod, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CapabilityError, ImageBuildError, ImagePullError, type BuildProgress } from '@berth/core';
import { createModalBackend } from '@berth/backend-modal';
import { ModalSimulator } from '@berth/test-support/modal-sim';

const sim = await ModalSimulator.start();
const backend = createModalBackend(sim.clientOptions());
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

  it('COPY and ADD get the context: files put once per content, then one mount; modes, subdirectories, links and WORKDIR kept', async () => {
    const nonce = randomBytes(4).toString('hex');
    const dir = await context(
      `FROM berth-test/busybox:latest\nWORKDIR /app\nCOPY src/ ./src/\nADD run.sh same.txt /app/\nCOPY link.txt /app/link.txt\nARG FLAVOUR=plain\nRUN echo "$FLAVOUR" > /app/flavour\nUSER 1234\nCMD ["sh"]\n`,
    );
    await mkdir(join(dir, 'src', 'deep'), { recursive: true });
    await writeFile(join(dir, 'src', 'deep', 'a.txt'), `a-${nonce}\n`);
    await writeFile(join(dir, 'same.txt'), `a-${nonce}\n`); // same bytes as src/deep/a.txt: put once
    await writeFile(join(dir, 'run.sh'), '#!/bin/sh\necho ran\n');
    await chmod(join(dir, 'run.sh'), 0o755);
    await symlink('same.txt', join(dir, 'link.txt'));
    const putsBefore = sim.mounts.puts.length;
    const env = backend.environment({ image: { build: { context: dir, args: { FLAVOUR: 'spicy' } } } });
    try {
      await env.start();
      const r = await env.exec('cat src/deep/a.txt same.txt link.txt flavour; ./run.sh; pwd; id -u');
      expect(r).toMatchObject({ exitCode: 0, stdout: `a-${nonce}\na-${nonce}\na-${nonce}\nspicy\nran\n/app\n1234\n` });
    } finally {
      await env.teardown();
    }
    const puts = sim.mounts.puts.slice(putsBefore);
    // Dockerfile, a.txt (= same.txt = link.txt) and run.sh: three distinct contents.
    expect(puts.length).toBe(3);
    const calls = sim.calls.map((c) => c.path.split('/').pop());
    expect(calls.lastIndexOf('MountGetOrCreate')).toBeLessThan(calls.lastIndexOf('ImageGetOrCreate'));
  });

  it('a context file over 4 MiB (Modal blob store, not spoken) is a CapabilityError naming it, before any upload', async () => {
    const dir = await context('FROM berth-test/busybox:latest\nCOPY big.bin /big.bin\n');
    await writeFile(join(dir, 'big.bin'), Buffer.alloc(4 * 1024 * 1024 + 1));
    const putsBefore = sim.mounts.puts.length;
    const error = await failure(backend.start({ image: { build: { context: dir } } }));
    expect(CapabilityError.isInstance(error), String(error)).toBe(true);
    expect((error as Error).message).toContain('big.bin');
    expect(sim.mounts.puts.length).toBe(putsBefore);
  });

  it('multi-stage builds and COPY --from are a CapabilityError that says what to do instead; preflight says so too', async () => {
    for (const dockerfile of [
      'FROM berth-test/busybox:latest AS base\nFROM base\nRUN true\n',
      'FROM berth-test/busybox:latest\nCOPY --from=berth-test/busybox:latest /bin/sh /sh\n',
    ]) {
      const dir = await context(dockerfile);
      const error = await failure(backend.start({ image: { build: { context: dir } } }));
      expect(CapabilityError.isInstance(error), String(error)).toBe(true);
      expect((error as Error).message).toMatch(/multi-stage|another stage/);
      const report = await backend.preflight({ image: { build: { context: dir } } });
      expect(report.checks.find((c) => c.name === 'image')).toMatchObject({ status: 'fail' });
    }
  });
});
