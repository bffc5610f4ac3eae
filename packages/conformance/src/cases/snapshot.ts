import { CapabilityError } from '@berth/core';
import { describe, expect } from 'vitest';
import type { Harness } from '../harness.js';

/** Environment.snapshot: an image of the filesystem that new sandboxes start from, or a CapabilityError by name. */
export function snapshotCases(h: Harness): void {
  describe('snapshots', () => {
    h.defineCase({
      id: 'snapshot.roundtrip',
      title:
        'a snapshot keeps the filesystem as it was (files, modes, a changed config file); a sandbox started from it sees it; the source runs on; remove is idempotent',
      timeoutMs: 120_000,
      run: async () => {
        await h.withEnv({}, async (source) => {
          const setup = await source.exec(
            'mkdir -p /opt/agent && printf installed > /opt/agent/marker && printf "#!/bin/sh\\necho agent ran\\n" > /opt/agent/run && chmod 755 /opt/agent/run && echo "snap=1" >> /etc/profile',
          );
          expect(setup.exitCode, setup.stderr).toBe(0);
          const snapshot = await source.snapshot();
          try {
            expect(snapshot).toMatchObject({ backend: h.name, sourceId: source.id });
            expect(snapshot.ref.length).toBeGreaterThan(0);
            // The source is unchanged and usable.
            expect((await source.exec('cat /opt/agent/marker')).stdout).toBe('installed');
            const copy = await h.start({ image: snapshot.ref });
            expect((await copy.exec('cat /opt/agent/marker')).stdout).toBe('installed');
            expect((await copy.exec('/opt/agent/run')).stdout).toBe('agent ran\n');
            expect((await copy.exec('grep -c snap=1 /etc/profile')).stdout.trim()).toBe('1');
            // What the copy changes is its own.
            await copy.exec('printf changed > /opt/agent/marker');
            expect((await source.exec('cat /opt/agent/marker')).stdout).toBe('installed');
            await h.release(copy);
          } finally {
            const present = h.options.faults?.imagePresent;
            if (present) expect(await present(snapshot.ref), `the snapshot ${snapshot.ref} before remove()`).toBe(true);
            await snapshot.remove();
            if (present) expect(await present(snapshot.ref), `the snapshot ${snapshot.ref} after remove()`).toBe(false);
            else h.partial.push({ id: 'snapshot.roundtrip', reason: 'remove() not shown to remove the snapshot: needs options.faults.imagePresent' });
            // Again: already gone is fine.
            await snapshot.remove();
          }
        });
      },
    });

    h.defineCase({
      id: 'snapshot.refused',
      title: "a backend without the snapshot capability refuses env.snapshot() with a CapabilityError naming 'snapshot' and what to do instead",
      unsupported: () => (h.backend().capabilities.snapshot ? 'the backend claims snapshot (snapshot.roundtrip runs instead)' : undefined),
      run: async () => {
        await h.withEnv({}, async (env) => {
          const error = await h.expectBerthError(env.snapshot(), CapabilityError);
          expect(error.capability).toBe('snapshot');
          expect(error.message).toMatch(/env\.snapshot\(\)/);
          expect((await env.exec('echo still usable')).stdout).toBe('still usable\n');
        });
      },
    });
  });
}
