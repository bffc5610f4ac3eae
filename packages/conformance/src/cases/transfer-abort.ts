import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { CancelledError } from '@berth/core';
import { describe, expect } from 'vitest';
import { describeError, sleep, type Harness } from '../harness.js';
import { writeRandomFile } from '../local.js';
import { run } from '../remote.js';

const MiB = 1024 * 1024;

/** Cancelled transfers: nothing crashes, nothing is left running, the environment stays usable. */
export function transferAbortCases(h: Harness): void {
  describe('transfers: cancellation', () => {
    h.defineCase({
      id: 'transfer.abort',
      title: 'aborting a large upload or download rejects with CancelledError, crashes nothing, and leaves the environment usable',
      timeoutMs: 60_000,
      run: async () => {
        const dir = await h.tempDir('abort');
        const local = join(dir, 'big.bin');
        await writeRandomFile(local, 128 * MiB);
        const uncaught: unknown[] = [];
        const onUncaught = (error: unknown) => uncaught.push(error);
        process.on('uncaughtException', onUncaught);
        try {
          await h.withEnv({}, async (env) => {
            const up = new AbortController();
            setTimeout(() => up.abort(new Error('caller gave up')), 100);
            const upload = await h.expectBerthError(env.uploadFile(local, '/tmp/aborted/big.bin', { signal: up.signal }), CancelledError);
            expect(upload.category).toBe('cancelled');

            // Abort a download once its first bytes have landed locally.
            await run(env, 'dd if=/dev/zero of=/tmp/big-remote.bin bs=1048576 count=256 2>/dev/null');
            const back = join(dir, 'back.bin');
            const down = new AbortController();
            const watcher = setInterval(() => {
              stat(back).then(
                (st) => st.size > 0 && down.abort(new Error('caller gave up')),
                () => undefined,
              );
            }, 2);
            try {
              await h.expectBerthError(env.downloadFile('/tmp/big-remote.bin', back, { signal: down.signal }), CancelledError);
            } finally {
              clearInterval(watcher);
            }

            const early = new AbortController();
            early.abort();
            await h.expectBerthError(env.uploadDir(dir, '/tmp/never', { signal: early.signal }), CancelledError);

            expect((await env.exec(['echo', 'usable'])).stdout).toBe('usable\n');
            await sleep(200);
          });
        } finally {
          process.off('uncaughtException', onUncaught);
        }
        expect(uncaught.map(describeError), 'uncaught exceptions during the aborted transfers').toEqual([]);
      },
    });
    h.defineCase({
      id: 'transfer.abort-early',
      title: 'uploads aborted in their first milliseconds reject with CancelledError, crash nothing, and leave nothing running in the sandbox',
      timeoutMs: 60_000,
      run: async () => {
        const dir = await h.tempDir('abort-early');
        await writeRandomFile(join(dir, 'f.bin'), 4 * MiB);
        const uncaught: unknown[] = [];
        const onUncaught = (error: unknown) => uncaught.push(error);
        process.on('uncaughtException', onUncaught);
        process.on('unhandledRejection', onUncaught);
        try {
          await h.withEnv({}, async (env) => {
            const outcomes = await Promise.all(
              Array.from({ length: 12 }, async (_, i) => {
                const controller = new AbortController();
                setTimeout(() => controller.abort(new Error('caller gave up')), i * 4);
                return env.uploadFile(join(dir, 'f.bin'), `/tmp/early-${i}/f.bin`, { signal: controller.signal }).then(
                  () => 'done',
                  (error: unknown) => (CancelledError.isInstance(error) ? 'cancelled' : describeError(error)),
                );
              }),
            );
            // Some may finish before their abort; none may fail any other way.
            expect(outcomes.filter((o) => o !== 'done' && o !== 'cancelled')).toEqual([]);
            // Nothing berth started for them is still running.
            let left = '';
            for (let i = 0; i < 50; i++) {
              left = (await env.exec('for p in /proc/[0-9]*; do tr "\\0" " " < $p/cmdline 2>/dev/null; echo; done')).stdout;
              if (!/\btar\b|\bdd\b/.test(left)) break;
              await sleep(100);
            }
            expect(left).not.toMatch(/\btar\b|\bdd\b/);
            expect((await env.exec(['echo', 'usable'])).stdout).toBe('usable\n');
          });
          await sleep(200);
        } finally {
          process.off('uncaughtException', onUncaught);
          process.off('unhandledRejection', onUncaught);
        }
        expect(uncaught.map(describeError), 'uncaught errors during the aborted uploads').toEqual([]);
      },
    });
  });
}
