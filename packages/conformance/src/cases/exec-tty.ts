import { ConfigError, type Environment } from '@berth/core';
import { describe, expect } from 'vitest';
import type { Harness } from '../harness.js';
import { waitForNoSleepers, waitForSleepers } from '../remote.js';

/**
 * Commands given a pseudo-terminal (opts.tty), on backends claiming the tty capability. A backend
 * without it must refuse with a CapabilityError: that is the kit's, tested in @berth/core's unit tests.
 */
export function execTtyCases(h: Harness): void {
  describe('exec: tty', () => {
    const shared = h.sharedEnv();
    const env = (): Environment => shared.env;

    h.defineCase({
      id: 'exec.tty',
      title: 'tty: true gives the command a terminal on stdin and stdout (24x80), stderr merged into stdout, \\r\\n line endings',
      run: async () => {
        const r = await env().exec('test -t 0 && test -t 1 && echo tty-yes', { tty: true, timeoutMs: h.ms(15_000) });
        expect(r).toMatchObject({ exitCode: 0, timedOut: false, stderr: '' });
        expect(r.stdout).toContain('tty-yes\r\n');
        const merged = await env().exec(['sh', '-c', 'echo to-out; echo to-err >&2; stty size'], { tty: true, timeoutMs: h.ms(15_000) });
        expect(merged.stdout).toBe('to-out\r\nto-err\r\n24 80\r\n');
        expect(merged.stderr).toBe('');
        // Opt-in only: without tty nothing is a terminal.
        expect((await env().exec('test -t 0 || test -t 1 || echo no-tty')).stdout).toBe('no-tty\n');
      },
    });

    h.defineCase({
      id: 'exec.tty-size',
      title: 'tty: { rows, cols } is the size the command sees from its first instruction; a malformed size is a ConfigError on opts.tty',
      run: async () => {
        const r = await env().exec('stty size', { tty: { rows: 33, cols: 101 }, timeoutMs: h.ms(15_000) });
        expect(r.exitCode, r.stdout).toBe(0);
        expect(r.stdout).toContain('33 101');
        for (const tty of [{ rows: 0, cols: 80 }, { rows: 24, cols: 1.5 }, { rows: 70_000, cols: 80 }, 'yes']) {
          const error = await h.expectBerthError(env().exec('true', { tty: tty as { rows: number; cols: number } }), ConfigError);
          expect(error.path).toBe('opts.tty');
        }
      },
    });

    h.defineCase({
      id: 'exec.tty-stdin',
      title: 'with tty, stdin is what the user types: an interactive sh runs the typed lines and exits with the typed status',
      run: async () => {
        const r = await env().exec(['sh'], { tty: true, stdin: 'echo typed-$((6*7))\nexit 5\n', timeoutMs: h.ms(20_000) });
        expect(r.timedOut, r.stdout).toBe(false);
        expect(r.exitCode, r.stdout).toBe(5);
        // The terminal echoes 'typed-$((6*7))'; only the shell running it prints typed-42.
        expect(r.stdout).toContain('typed-42');
      },
    });

    h.defineCase({
      id: 'exec.tty-timeout',
      title: 'a tty command past its timeoutMs is killed with its whole process tree, and the exec returns timedOut',
      run: async () => {
        const marker = 7501;
        const timeoutMs = h.ms(3_000);
        const started = Date.now();
        const running = env().exec(`sh -c 'trap "" TERM HUP; sleep ${marker}1' & sleep ${marker}2; echo never`, { tty: true, timeoutMs });
        // The probe sees the live tree first: one that matched nothing would pass below.
        expect((await waitForSleepers(env(), marker, 2, timeoutMs - 200)).length).toBeGreaterThanOrEqual(2);
        const r = await running;
        expect(r.timedOut).toBe(true);
        expect(r.exitCode).not.toBe(0);
        expect(r.stdout).not.toContain('never');
        expect(Date.now() - started).toBeLessThan(timeoutMs + h.ms(5_000));
        expect(await waitForNoSleepers(env(), marker, h.ms(1_000))).toEqual([]);
        expect((await env().exec(['echo', 'alive'], { tty: true })).stdout).toBe('alive\r\n');
      },
    });
  });
}
