import { join } from 'node:path';
import { writeFile } from 'node:fs/promises';
import { SandboxLostError, TransferError, classifyFailure, type Environment } from '@berth/core';
import { execInFlight } from '../in-flight.js';
import { describe, expect } from 'vitest';
import type { Harness } from '../harness.js';

export function lostCases(h: Harness): void {
  describe('sandbox lost', () => {
    const kill = async (env: Environment): Promise<void> => {
      const fault = h.options.faults?.kill;
      if (!fault) throw new Error('faults.kill is required');
      await fault(env);
    };

    h.defineCase({
      id: 'lost.exec-after-kill',
      title: 'after the sandbox is killed, exec rejects with SandboxLostError within seconds',
      needs: ['faults.kill'],
      run: async () => {
        await h.withEnv({}, async (env) => {
          const lost: string[] = [];
          env.events.on('lost', (reason) => lost.push(reason));
          await kill(env);
          const started = Date.now();
          const error = await h.expectBerthError(env.exec('echo hello'), SandboxLostError);
          expect(Date.now() - started).toBeLessThan(h.ms(5_000));
          expect(error.category).toBe('transient_infra');
          expect(error.retryable).toBe(true);
          expect(error.environmentId).toBe(env.id);
          expect(env.phase).toBe('lost');
          expect(lost.length).toBeGreaterThan(0);
          // And again: a lost sandbox stays lost.
          await h.expectBerthError(env.exec(['echo', 'again']), SandboxLostError);
        });
      },
    });

    h.defineCase({
      id: 'lost.exec-in-flight',
      title: 'an exec in flight when the sandbox dies rejects with SandboxLostError quickly',
      needs: ['faults.kill'],
      run: async () => {
        await h.withEnv({}, async (env) => {
          const { started, result: pending } = execInFlight(env, 'sleep 30; echo finished');
          await started;
          const killedAt = Date.now();
          await kill(env);
          const error = await h.expectBerthError(pending, SandboxLostError);
          expect(Date.now() - killedAt, 'the in-flight exec must not wait for sleep 30').toBeLessThan(h.ms(10_000));
          expect(error.category).toBe('transient_infra');
        });
      },
    });

    h.defineCase({
      id: 'lost.upload-after-kill',
      title: 'transfers after a kill reject with a transient TransferError caused by SandboxLostError',
      needs: ['faults.kill'],
      run: async () => {
        const dir = await h.tempDir('lost-upload');
        await writeFile(join(dir, 'tests.txt'), 'the tests directory\n');
        await h.withEnv({}, async (env) => {
          await kill(env);
          const upload = await h.expectBerthError(env.uploadDir(dir, '/tests'), TransferError);
          expect(upload.category).toBe('transient_infra');
          expect(upload.retryable).toBe(true);
          expect(SandboxLostError.isInstance(upload.cause), `cause of ${upload.message}`).toBe(true);
          const download = await h.expectBerthError(env.downloadFile('/etc/passwd', join(dir, 'passwd')), TransferError);
          expect(download.category).toBe('transient_infra');
          expect(SandboxLostError.isInstance(download.cause)).toBe(true);
          const file = await h.expectBerthError(env.uploadFile(join(dir, 'tests.txt'), '/tests/tests.txt'), TransferError);
          expect(file.category).toBe('transient_infra');
        });
      },
    });

    h.defineCase({
      id: 'lost.teardown-after-kill',
      title: 'teardown after the sandbox was killed succeeds (twice)',
      needs: ['faults.kill'],
      run: async () => {
        const env = await h.start();
        await kill(env);
        await env.teardown();
        await env.teardown();
        expect(env.phase).toBe('stopped');
        await h.release(env);
      },
    });

    h.defineCase({
      id: 'lost.classify',
      title: 'classifyFailure says transient_infra for a lost sandbox, never unclassified',
      needs: ['faults.kill'],
      run: async () => {
        const dir = await h.tempDir('lost-classify');
        await h.withEnv({}, async (env) => {
          await kill(env);
          const exec = await h.expectBerthError(env.exec('true'), SandboxLostError);
          const execClass = classifyFailure(exec);
          expect(execClass.category).toBe('transient_infra');
          expect(execClass.unclassified).toBe(false);
          expect(execClass.retryable).toBe(true);
          expect(execClass.type).toBe('SandboxLostError');
          const upload = await h.expectBerthError(env.uploadDir(dir, '/tests'), TransferError);
          const uploadClass = classifyFailure(upload);
          expect(uploadClass.category).toBe('transient_infra');
          expect(uploadClass.unclassified).toBe(false);
          // Wrapped by a runner, it is still found.
          const wrapped = classifyFailure(new Error('trial failed', { cause: exec }));
          expect(wrapped.category).toBe('transient_infra');
        });
      },
    });
  });
}
