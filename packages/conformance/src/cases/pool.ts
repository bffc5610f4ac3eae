import { CancelledError, ImagePullError, TaskFailure, type Backend, type EnvironmentPool } from '@berth/core';
import { describe, expect, vi } from 'vitest';
import { sleep, type Harness } from '../harness.js';

/**
 * Warm pools (Backend.pool), on the backend itself: a claim hands out a running sandbox, one that
 * died while idle is never handed out, a failed start reaches the claim as its own error, closing
 * with claims waiting leaves nothing, and a pooled sandbox's lifetime counts from its claim.
 */
export function poolCases(h: Harness): void {
  describe('warm pools', () => {
    const backend = (): Backend => h.rawBackend();
    /** A pool closed at the end of the case, whatever happens in it. */
    const withPool = async (pool: EnvironmentPool, fn: (pool: EnvironmentPool) => Promise<void>): Promise<void> => {
      try {
        await fn(pool);
      } finally {
        await pool.close();
      }
    };

    h.defineCase({
      id: 'pool.claim',
      title: 'a filled pool hands out running sandboxes that work like fresh ones, refills to its size, and close removes what it holds',
      needs: ['faults.listLeftovers'],
      timeoutMs: 120_000,
      run: async () => {
        const before = new Set(await h.options.faults!.listLeftovers!());
        await withPool(backend().pool(h.spec({ env: { POOLED: 'yes' } }), { size: 2 }), async (pool) => {
          await pool.fill();
          expect(pool.stats).toMatchObject({ idle: 2, claimed: 0 });
          const env = h.track(await pool.claim());
          expect(env.phase).toBe('running');
          const r = await env.exec('echo "$POOLED"; echo err >&2; exit 3');
          expect(r).toMatchObject({ exitCode: 3, stdout: 'yes\n', stderr: 'err\n' });
          await pool.fill();
          expect(pool.stats).toMatchObject({ idle: 2, claimed: 1 });
          await h.release(env);
        });
        expect(
          (await h.options.faults!.listLeftovers!()).filter((id) => !before.has(id)),
          'close removes every idle sandbox',
        ).toEqual([]);
      },
    });

    h.defineCase({
      id: 'pool.dead-while-idle',
      title: 'a pooled sandbox killed while idle is never handed out: the claim finds it dead, removes it and gives a live one',
      needs: ['faults.kill'],
      timeoutMs: 120_000,
      run: async () => {
        await withPool(backend().pool(h.spec(), { size: 2 }), async (pool) => {
          const ready: string[] = [];
          pool.events.on('ready', (id) => ready.push(id));
          await pool.fill();
          const victim = ready[0]!;
          // Resolves once the engine says the victim no longer runs (faults.kill's contract).
          await h.options.faults!.kill!({ id: victim });
          const removed: string[] = [];
          pool.events.on('removed', (id, reason) => reason === 'dead' && removed.push(id));
          const first = h.track(await pool.claim());
          const second = h.track(await pool.claim());
          expect([first.id, second.id]).not.toContain(victim);
          for (const env of [first, second]) expect((await env.exec('echo alive')).stdout).toBe('alive\n');
          expect(pool.stats.dead).toBe(1);
          // The claim found it dead and removed it: said by the pool's own event, for that sandbox.
          await vi.waitFor(() => expect(removed).toEqual([victim]), { timeout: h.ms(30_000) });
          await h.release(first);
          await h.release(second);
        });
      },
    });

    h.defineCase({
      id: 'pool.failed-start',
      title: "a start that fails reaches the waiting claim as its own error (a missing image: ImagePullError 'not_found'), not a pool error",
      needs: ['images.missing'],
      timeoutMs: 120_000,
      run: async () => {
        const missing = h.options.images.missing!;
        const auth = h.options.images.private?.auth;
        await withPool(backend().pool(h.spec({ image: auth ? { ref: missing, auth } : missing }), { size: 1 }), async (pool) => {
          const error = await h.expectBerthError(pool.claim(), ImagePullError);
          expect(error.reason).toBe('not_found');
          expect(pool.stats.failed).toBeGreaterThan(0);
        });
      },
    });

    h.defineCase({
      id: 'pool.close-while-claims-wait',
      title: 'closing a pool while claims wait rejects them with CancelledError, waits for the starts in flight, and leaves nothing',
      needs: ['faults.listLeftovers'],
      timeoutMs: 120_000,
      run: async () => {
        const before = new Set(await h.options.faults!.listLeftovers!());
        const pool = backend().pool(h.spec(), { size: 1 });
        const claims = [pool.claim(), pool.claim(), pool.claim()];
        for (const claim of claims) claim.catch(() => undefined);
        await sleep(50);
        await pool.close();
        for (const claim of claims) {
          const outcome = await claim.then(
            (env) => (h.track(env), 'claimed'),
            (e: unknown) => e,
          );
          expect(CancelledError.isInstance(outcome), String(outcome)).toBe(true);
        }
        expect((await h.options.faults!.listLeftovers!()).filter((id) => !before.has(id))).toEqual([]);
      },
    });

    h.defineCase({
      id: 'pool.lifetime-from-claim',
      title:
        "a pooled sandbox's timeouts.lifetimeMs counts from its claim: idle longer than it, it runs; past it, a command in flight ends as LifetimeExceeded",
      timeoutMs: 120_000,
      run: async () => {
        const lifetimeMs = h.ms(4_000);
        await withPool(backend().pool(h.spec({ timeouts: { lifetimeMs } }), { size: 1, maxIdleMs: 120_000 }), async (pool) => {
          await pool.fill();
          await sleep(lifetimeMs + 500);
          const env = h.track(await pool.claim());
          expect((await env.exec('echo still here')).stdout).toBe('still here\n');
          const started = Date.now();
          const error = await h.expectBerthError(env.exec('sleep 60'), TaskFailure);
          expect(error.type).toBe('LifetimeExceeded');
          expect(Date.now() - started).toBeLessThan(lifetimeMs + h.ms(15_000));
          await h.release(env);
        });
      },
    });
  });
}
