import { ConfigError, type Environment } from '@berth/core';
import { describe, expect } from 'vitest';
import type { Harness } from '../harness.js';

export function execUserCases(h: Harness): void {
  describe('exec user', () => {
    const shared = h.sharedEnv();
    const env = (): Environment => shared.env;

    h.defineCase({
      id: 'exec.user',
      title: "opts.user runs the command as that uid (and group); the default is the image's user",
      run: async () => {
        expect((await env().exec(['id', '-u'])).stdout.trim()).toBe('0');
        const as = await env().exec(['sh', '-c', 'id -u; id -g'], { user: '1234:2345' });
        expect(as.stdout).toBe('1234\n2345\n');
        expect((await env().exec('id -u', { user: '0' })).stdout.trim()).toBe('0');
        // The cwd and the launcher still apply as the user.
        expect((await env().exec(['pwd'], { user: '1234', cwd: '/tmp' })).stdout.trim()).toBe('/tmp');
      },
    });

    h.defineCase({
      id: 'exec.user-unknown',
      title: 'a user the image does not have, or a malformed one, is a ConfigError on opts.user, not an exit code',
      run: async () => {
        for (const user of ['berth-no-such-user', 'a b', '']) {
          const error = await env()
            .exec(['true'], { user })
            .then(
              () => undefined,
              (e: unknown) => e,
            );
          expect(ConfigError.isInstance(error), `user ${JSON.stringify(user)}: ${String(error)}`).toBe(true);
          expect((error as ConfigError).path).toBe('opts.user');
          expect((error as Error).message).toContain(user === '' ? 'user must be' : user);
        }
      },
    });
  });
}
