import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { ConfigError, type Environment } from '@berth/core';
import { describe, expect } from 'vitest';
import type { Harness } from '../harness.js';
import { remoteDigestAlgorithm } from '../remote.js';

const MiB = 1024 * 1024;

/** What an exec reads: strings, bytes and streams, streams that fail, and no stdin at all. */
export function execStdinCases(h: Harness): void {
  describe('exec: stdin', () => {
    const shared = h.sharedEnv();
    const env = (): Environment => shared.env;

    h.defineCase({
      id: 'exec.stdin',
      title: 'stdin as a string and as a Uint8Array reaches the command',
      run: async () => {
        const text = 'hello\nwörld\n';
        const r = await env().exec(['cat'], { stdin: text });
        expect(r.stdout).toBe(text);
        const bytes = new Uint8Array(randomBytes(MiB + 17));
        const big = await env().exec(['cat'], { stdin: bytes });
        expect(big.exitCode).toBe(0);
        expect(big.stdoutBytes.length).toBe(bytes.length);
        expect(Buffer.compare(Buffer.from(big.stdoutBytes), Buffer.from(bytes))).toBe(0);
        const shell = await env().exec('read a; read b; echo "$b-$a"', { stdin: 'one\ntwo\n' });
        expect(shell.stdout).toBe('two-one\n');
      },
    });

    h.defineCase({
      id: 'exec.stdin-stream',
      title: 'stdin as a stream (a Node Readable and an async iterable) reaches the command byte for byte, with backpressure',
      timeoutMs: 60_000,
      run: async () => {
        const algorithm = await remoteDigestAlgorithm(env());
        const chunk = randomBytes(MiB);
        const chunks = 32;
        const expected = createHash(algorithm);
        for (let i = 0; i < chunks; i++) expected.update(chunk);
        const digest = expected.digest('hex');
        // A generator that only makes the next chunk when asked: 32 MiB never sit in memory at once.
        let made = 0;
        async function* generated(): AsyncGenerator<Uint8Array> {
          for (; made < chunks; made++) yield chunk;
        }
        const fromIterable = await env().exec([`${algorithm}sum`], { stdin: generated() });
        expect(fromIterable.exitCode, fromIterable.stderr).toBe(0);
        expect(fromIterable.stdout.split(/\s/)[0]).toBe(digest);
        const fromReadable = await env().exec([`${algorithm}sum`], { stdin: Readable.from(Array.from({ length: chunks }, () => chunk)) });
        expect(fromReadable.stdout.split(/\s/)[0]).toBe(digest);
        // A command that stops reading early is a result, not a hang or a crash.
        const early = await env().exec(['head', '-c', '10'], { stdin: Readable.from(Array.from({ length: chunks }, () => chunk)), timeoutMs: h.ms(30_000) });
        expect(early).toMatchObject({ exitCode: 0, timedOut: false });
        expect(early.stdoutBytes.length).toBe(10);
      },
    });

    h.defineCase({
      id: 'exec.stdin-stream-fails',
      title: 'a stdin stream that fails (before or during the command) is a ConfigError on opts.stdin, with no hang and no crash',
      timeoutMs: 60_000,
      run: async () => {
        async function* failing(): AsyncGenerator<Uint8Array> {
          yield Buffer.from('first chunk\n');
          throw new Error('the source broke');
        }
        const during = await h.expectBerthError(env().exec(['cat'], { stdin: failing() }), ConfigError);
        expect(during.path).toBe('opts.stdin');
        expect(during.message).toContain('the source broke');
        const before = await h.expectBerthError(env().exec(['wc', '-c'], { stdin: createReadStream('/definitely/not/here') }), ConfigError);
        expect(before.path).toBe('opts.stdin');
        expect((await env().exec(['echo', 'usable'])).stdout).toBe('usable\n');
      },
    });

    h.defineCase({
      id: 'exec.stdin-eof',
      title: 'a command that reads stdin gets EOF at once when no stdin is given',
      run: async () => {
        const started = Date.now();
        const r = await env().exec(['cat'], { timeoutMs: h.ms(15_000) });
        expect(r.timedOut).toBe(false);
        expect(r.exitCode).toBe(0);
        expect(r.stdout).toBe('');
        const read = await env().exec('if read x; then echo "got $x"; else echo eof; fi', { timeoutMs: h.ms(15_000) });
        expect(read.stdout).toBe('eof\n');
        expect(Date.now() - started).toBeLessThan(h.ms(5_000));
      },
    });
  });
}
