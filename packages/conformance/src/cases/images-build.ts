import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ImageBuildError } from '@berth/core';
import { describe, expect } from 'vitest';
import type { Harness } from '../harness.js';

/** A build context FROM the basic image; a nonce makes its content (and so its tag) unique. */
async function context(base: string, steps: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'berth-conformance-build-'));
  await writeFile(join(dir, 'Dockerfile'), `FROM ${base}\nCOPY nonce /nonce\n${steps}\n`);
  await writeFile(join(dir, 'nonce'), randomBytes(8).toString('hex'));
  return dir;
}

export function imageBuildCases(h: Harness): void {
  describe('image builds', () => {
    h.defineCase({
      id: 'image.build',
      title: 'image { build } runs what its Dockerfile built; build progress is reported',
      timeoutMs: 180_000,
      run: async () => {
        const dir = await context(h.options.images.basic, 'RUN echo built > /built.txt');
        try {
          const env = h.track(h.backend().environment(h.spec({ image: { build: { context: dir, network: 'none' } } })));
          const lines: string[] = [];
          env.events.on('build', (p) => lines.push(p.line));
          await env.start();
          expect((await env.exec(['cat', '/built.txt'])).stdout).toBe('built\n');
          expect(lines.length).toBeGreaterThan(0);
          await h.release(env);
        } finally {
          await h.options.faults?.forgetBuild?.(dir);
          await rm(dir, { recursive: true, force: true });
        }
      },
    });

    h.defineCase({
      id: 'image.build-step-fails',
      title: 'a failing Dockerfile step is a permanent ImageBuildError naming the step',
      timeoutMs: 180_000,
      run: async () => {
        const dir = await context(h.options.images.basic, 'RUN echo "needs make" >&2 && exit 3');
        try {
          const error = await h.expectStartFailure(h.spec({ image: { build: { context: dir, network: 'none' } } }), ImageBuildError);
          expect(error.reason).toBe('step_failed');
          expect(error.category).toBe('permanent_infra');
          expect(error.step ?? '').toContain('exit 3');
          expect(error.logTail).toContain('needs make');
        } finally {
          await h.options.faults?.forgetBuild?.(dir);
          await rm(dir, { recursive: true, force: true });
        }
      },
    });
  });
}
