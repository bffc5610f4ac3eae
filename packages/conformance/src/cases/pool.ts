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
        const added = async () => (await h.options.faults!.listLeftovers!()).filter((id) => !before.has(id));
        await withPool(backend().pool(h.spec({ env: { POOLED: 'yes' } }), { size: 2 }), async (pool) => {
          await pool.fill();
          expect(pool.stats).toMatchObject({ idle: 2, claimed: 0 });
          const env = h.track(await pool.claim());
          expect(env.phase).toBe('running');
          const r = await env.exec('echo "$POOLED"; echo err >&2; exit 3');
          expect(r).toMatchObject({ exitCode: 3, stdout: 'yes\n', stderr: 'err\n' });
          // The claim refills on its own: nothing here asks it to.
          await vi.waitFor(() => expect(pool.stats).toMatchObject({ idle: 2, claimed: 1 }), { timeout: h.ms(60_000), interval: 100 });
          // What close must remove is there to be seen: the two idle sandboxes beside the claimed one.
          expect(await added(), "the pool's sandboxes (two idle, one claimed) as listLeftovers sees them").toHaveLength(3);
          await h.release(env);
        });
        expect(await added(), 'close removes every idle sandbox').toEqual([]);
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
        const added = async () => (await h.options.faults!.listLeftovers!()).filter((id) => !before.has(id));
        const pool = backend().pool(h.spec(), { size: 1 });
        const claims = [pool.claim(), pool.claim(), pool.claim()];
        for (const claim of claims) claim.catch(() => undefined);
        // Close once the engine holds a sandbox of a start still in flight: a close that did not
        // wait for it would resolve with that sandbox still listed.
        const deadline = Date.now() + h.ms(60_000);
        while ((await added()).length === 0) {
          if (Date.now() > deadline) throw new Error(`no sandbox of the pool's starts reached the engine within ${h.ms(60_000)} ms`);
          await sleep(20);
        }
        // Read in the same tick as close(): starts still in flight, and claims already handed a sandbox.
        const { starting, claimed } = pool.stats;
        expect(starting, 'starts in flight when close() was called').toBeGreaterThan(0);
        expect(claimed, 'claims still waiting when close() was called').toBeLessThan(claims.length);
        await pool.close();
        expect(await added(), 'sandboxes left once close() resolved').toEqual([]);
        const outcomes = await Promise.all(
          claims.map((claim) =>
            claim.then(
              async (env) => {
                // Handed its sandbox before close(): the caller's to tear down, not the pool's.
                await h.release(h.track(env));
                return 'claimed';
              },
              (e: unknown) => (CancelledError.isInstance(e) ? 'cancelled' : String(e)),
            ),
          ),
        );
        expect(outcomes.filter((o) => o === 'cancelled')).toHaveLength(claims.length - claimed);
        expect(outcomes.filter((o) => o === 'claimed')).toHaveLength(claimed);
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
