import { ConfigError } from '@berth/core';
import { describe, expect } from 'vitest';
import type { Harness } from '../harness.js';

/** Image mounts (seed 001: an agent runtime mounted into older task images), for backends that claim them. */
export function mountCases(h: Harness): void {
  describe('mounts', () => {
    h.defineCase({
      id: 'mounts.image',
      title: "an image mount puts another image's directory, or its whole filesystem, read-only at the target",
      run: async () => {
        const image = h.options.images.basic;
        const env = await h.start({
          mounts: [
            { type: 'image', image, subpath: 'bin', target: '/opt/runtime' },
            { type: 'image', image, target: '/opt/whole' },
          ],
        });
        // The mounted binaries run from there, and both mounts hold what the image holds.
        expect(await env.exec(['/opt/runtime/sh', '-c', 'echo from the runtime'])).toMatchObject({ exitCode: 0, stdout: 'from the runtime\n' });
        expect((await env.exec('test -x /opt/whole/bin/sh && test -d /opt/whole/etc && echo whole')).stdout).toBe('whole\n');
        expect((await env.exec('test -e /opt/whole/proc/self && echo kernel || echo none')).stdout).toBe('none\n');
        // Read-only: the task cannot change the runtime it was given.
        const write = await env.exec('touch /opt/runtime/x 2>&1');
        expect(write.exitCode).not.toBe(0);
        expect(write.stdout).toMatch(/read-only|permission/i);
        await h.release(env);
      },
    });

    h.defineCase({
      id: 'mounts.image-missing-subpath',
      title: 'an image mount of a directory the image does not have is a ConfigError on spec.mounts that names it',
      run: async () => {
        const spec = h.spec({ mounts: [{ type: 'image', image: h.options.images.basic, subpath: 'no/such/dir', target: '/opt/runtime' }] });
        const error = await h.expectStartFailure(spec, ConfigError);
        expect(error.path).toMatch(/^spec\.mounts/);
        expect(error.message).toContain('no/such/dir');
        expect(error.category).toBe('permanent_infra');
      },
    });
  });
}
