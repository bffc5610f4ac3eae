import { CancelledError, ConfigError, type Environment } from '@berth/core';
import { describe, expect } from 'vitest';
import { uniqueName, type Harness } from '../harness.js';
import { waitForNoSleepers, waitForSleepers } from '../remote.js';

const MiB = 1024 * 1024;

/** A shell loop printing `count` numbered lines, with only builtins. */
function lines(prefix: string, count: number, stream: 'out' | 'err' = 'out'): string {
  return `n=0; while [ $n -lt ${count} ]; do echo "${prefix}$n"${stream === 'err' ? ' >&2' : ''}; n=$((n+1)); done`;
}

function expectedLines(prefix: string, count: number): string {
  let out = '';
  for (let n = 0; n < count; n++) out += `${prefix}${n}\n`;
  return out;
}

export function execCases(h: Harness): void {
  describe('exec', () => {
    const shared = h.sharedEnv();
    const env = (): Environment => shared.env;

    h.defineCase({
      id: 'exec.argv',
      title: 'argv runs without a shell: arguments arrive verbatim',
      run: async () => {
        const r = await env().exec(['echo', '$HOME', '$((1+1))', '`id`']);
        expect(r.stdout).toBe('$HOME $((1+1)) `id`\n');
        expect(r.exitCode).toBe(0);
        const spaced = await env().exec(['printf', '%s|', 'a b', "c'd", 'e"f', '', 'g\nh']);
        expect(spaced.stdout).toBe(`a b|c'd|e"f||g\nh|`);
      },
    });

    h.defineCase({
      id: 'exec.shell',
      title: 'a string runs through sh -c: expansion, pipes and redirects work',
      run: async () => {
        const r = await env().exec('echo $((6*7)) "$HOME" | cat; echo piped >/dev/null; echo done');
        const [first, second] = r.stdout.split('\n');
        expect(first?.startsWith('42 ')).toBe(true);
        expect(first).not.toContain('$HOME');
        expect(second).toBe('done');
        expect(r.exitCode).toBe(0);
      },
    });

    h.defineCase({
      id: 'exec.exit-codes',
      title: 'exit codes 0, 3 and 255 are returned as data, not thrown',
      run: async () => {
        for (const code of [0, 3, 255]) {
          const shell = await env().exec(`echo code; exit ${code}`);
          expect(shell.exitCode).toBe(code);
          expect(shell.stdout).toBe('code\n');
          expect(shell.timedOut).toBe(false);
          const argv = await env().exec(['sh', '-c', `exit ${code}`]);
          expect(argv.exitCode).toBe(code);
        }
      },
    });

    h.defineCase({
      id: 'exec.signal-exit',
      title: 'a command that kills itself is a result (exit 128+n), and the sandbox lives on',
      run: async () => {
        const r = await env().exec('echo before; kill -9 $$');
        expect(r.exitCode).toBe(137);
        expect(r.stdout).toBe('before\n');
        expect(r.timedOut).toBe(false);
        expect((await env().exec(['echo', 'still here'])).stdout).toBe('still here\n');
      },
    });

    h.defineCase({
      id: 'exec.stderr',
      title: 'stderr is kept apart from stdout',
      run: async () => {
        const r = await env().exec('echo out1; echo err1 >&2; echo out2; echo err2 >&2; exit 1');
        expect(r.stdout).toBe('out1\nout2\n');
        expect(r.stderr).toBe('err1\nerr2\n');
        expect(r.exitCode).toBe(1);
        expect(Buffer.from(r.stderrBytes).toString('utf8')).toBe(r.stderr);
      },
    });

    h.defineCase({
      id: 'exec.output-cap-default',
      title: '50 MB of output is capped at 10 MiB, keeping the tail',
      timeoutMs: 90_000,
      run: async () => {
        const r = await env().exec('dd if=/dev/zero bs=1048576 count=50 2>/dev/null; echo END');
        expect(r.exitCode).toBe(0);
        expect(r.truncated.stdout).toBe(true);
        expect(r.truncated.stderr).toBe(false);
        expect(r.stdoutBytes.length).toBe(10 * MiB);
        expect(r.stdout.length).toBe(10 * MiB);
        expect(r.stdout.endsWith('\0END\n')).toBe(true);
        expect(r.stdoutBytes[0]).toBe(0);
      },
    });

    h.defineCase({
      id: 'exec.output-cap-custom',
      title: 'maxOutputBytes caps each stream separately and keeps the tail',
      run: async () => {
        const r = await env().exec(`${lines('line ', 2000)}; ${lines('eline ', 2000, 'err')}`, { maxOutputBytes: 100 });
        expect(r.truncated).toEqual({ stdout: true, stderr: true });
        expect(r.stdoutBytes.length).toBe(100);
        expect(r.stderrBytes.length).toBe(100);
        expect(r.stdout.endsWith('line 1998\nline 1999\n')).toBe(true);
        expect(r.stderr.endsWith('eline 1998\neline 1999\n')).toBe(true);
        const small = await env().exec('echo hi', { maxOutputBytes: 100 });
        expect(small.truncated).toEqual({ stdout: false, stderr: false });
        expect(small.stdout).toBe('hi\n');
      },
    });

    h.defineCase({
      id: 'exec.binary-output',
      title: 'non-UTF-8 bytes round trip exactly in stdoutBytes',
      run: async () => {
        const r = await env().exec("printf '\\377\\376\\000\\001'");
        expect([...r.stdoutBytes]).toEqual([0xff, 0xfe, 0x00, 0x01]);
        const all = await env().exec(['cat'], { stdin: Uint8Array.from({ length: 256 }, (_, i) => i) });
        expect([...all.stdoutBytes]).toEqual(Array.from({ length: 256 }, (_, i) => i));
      },
    });

    h.defineCase({
      id: 'exec.cwd',
      title: 'the cwd option sets the working directory',
      run: async () => {
        const dir = `/tmp/${uniqueName('cwd')}`;
        await env().exec(['mkdir', '-p', `${dir}/sub dir`]);
        expect((await env().exec('pwd', { cwd: `${dir}/sub dir` })).stdout).toBe(`${dir}/sub dir\n`);
        expect((await env().exec(['pwd'], { cwd: '/tmp' })).stdout).toBe('/tmp\n');
      },
    });

    h.defineCase({
      id: 'exec.env',
      title: 'the env option sets variables verbatim, for argv and shell forms',
      run: async () => {
        const tricky = `two words $HOME "q" 'a' ;|& \\n`;
        const r = await env().exec('printf "%s|%s" "$BERTH_A" "$BERTH_B"', { env: { BERTH_A: '1', BERTH_B: tricky } });
        expect(r.stdout).toBe(`1|${tricky}`);
        const argv = await env().exec(['sh', '-c', 'printf "%s" "$BERTH_A"'], { env: { BERTH_A: 'argv-form' } });
        expect(argv.stdout).toBe('argv-form');
        const unset = await env().exec('printf "%s" "${BERTH_A-unset}"');
        expect(unset.stdout).toBe('unset');
      },
    });

    h.defineCase({
      id: 'exec.env-invalid-name',
      title: 'an env option whose name is not a variable name is a ConfigError, not silently mangled',
      run: async () => {
        const mangled = await h.expectBerthError(env().exec('printf "%s" "${A-unset}"', { env: { 'A=B': 'x' } }), ConfigError);
        expect(mangled.message).toContain('A=B');
        await h.expectBerthError(env().exec('true', { env: { '': 'x' } }), ConfigError);
      },
    });

    h.defineCase({
      id: 'exec.cwd-missing',
      title: 'a cwd that does not exist is exit 126 with the reason on stderr, the same on every backend',
      run: async () => {
        const missing = `/tmp/${uniqueName('no-such-cwd')}`;
        for (const command of [['pwd'], 'pwd'] as const) {
          const result = await env().exec(command, { cwd: missing });
          expect(result).toMatchObject({ exitCode: 126, stdout: '' });
          expect(result.stderr).toBe(`berth: cannot run in ${missing}: no such directory\n`);
        }
        expect((await env().exec(['pwd'], { cwd: '/tmp' })).stdout).toBe('/tmp\n');
        expect((await env().exec(['echo', 'fine'])).stdout).toBe('fine\n');
      },
    });

    h.defineCase({
      id: 'exec.streaming',
      title: 'onStdout/onStderr receive every byte, in order, while the command runs',
      run: async () => {
        const out: Buffer[] = [];
        const err: Buffer[] = [];
        const r = await env().exec(`${lines('out ', 300)}; ${lines('err ', 300, 'err')}; dd if=/dev/zero bs=65536 count=16 2>/dev/null; echo tail`, {
          onStdout: (chunk) => out.push(Buffer.from(chunk)),
          onStderr: (chunk) => err.push(Buffer.from(chunk)),
        });
        expect(r.exitCode).toBe(0);
        const streamedOut = Buffer.concat(out);
        const streamedErr = Buffer.concat(err);
        expect(streamedOut.length).toBe(r.stdoutBytes.length);
        expect(Buffer.compare(streamedOut, Buffer.from(r.stdoutBytes))).toBe(0);
        expect(Buffer.compare(streamedErr, Buffer.from(r.stderrBytes))).toBe(0);
        expect(streamedOut.subarray(0, expectedLines('out ', 300).length).toString()).toBe(expectedLines('out ', 300));
        expect(streamedErr.toString()).toBe(expectedLines('err ', 300));
        expect(streamedOut.subarray(-5).toString()).toBe('tail\n');

        // Live: the first line arrives well before the command ends.
        let firstAt = 0;
        const started = Date.now();
        const live = await env().exec('echo first; sleep 1; echo second', {
          onStdout: () => {
            firstAt ||= Date.now();
          },
        });
        const endedAt = Date.now();
        expect(live.stdout).toBe('first\nsecond\n');
        expect(firstAt).toBeGreaterThan(0);
        expect(endedAt - firstAt, `first chunk at +${firstAt - started} ms, end at +${endedAt - started} ms`).toBeGreaterThan(500);
      },
    });

    h.defineCase({
      id: 'exec.concurrent',
      title: 'eight concurrent execs on one environment each get their own output',
      run: async () => {
        const results = await Promise.all(
          Array.from({ length: 8 }, (_, i) => env().exec(`${lines(`task-${i}-`, (i + 1) * 150)}; echo "err-${i}" >&2; exit ${i}`)),
        );
        results.forEach((r, i) => {
          expect(r.exitCode).toBe(i);
          expect(r.stdout).toBe(expectedLines(`task-${i}-`, (i + 1) * 150));
          expect(r.stderr).toBe(`err-${i}\n`);
        });
      },
    });

    h.defineCase({
      id: 'exec.missing-command',
      title: 'a missing command is exit 127 with the reason on stderr (data, not a throw), the same on every backend',
      run: async () => {
        const argv = await env().exec(['berth-no-such-command-xyz', 'arg']);
        expect(argv).toMatchObject({ exitCode: 127, stdout: '', stderr: 'berth: berth-no-such-command-xyz: command not found\n' });
        const path = await env().exec(['/no/such/binary']);
        expect(path).toMatchObject({ exitCode: 127, stdout: '', stderr: 'berth: /no/such/binary: no such file\n' });
        const shell = await env().exec('berth-no-such-command-xyz');
        expect(shell.exitCode).toBe(127);
        expect(shell.stderr).toContain('berth-no-such-command-xyz');
        expect((await env().exec(['echo', 'fine'])).stdout).toBe('fine\n');
      },
    });

    h.defineCase({
      id: 'exec.empty-command',
      title: 'an empty command (string or argv), a non-string argument or stdin, or a non-positive timeout is a ConfigError',
      run: async () => {
        await h.expectBerthError(env().exec([]), ConfigError);
        await h.expectBerthError(env().exec(['']), ConfigError);
        await h.expectBerthError(env().exec(''), ConfigError);
        await h.expectBerthError(env().exec('  \n'), ConfigError);
        // What JavaScript callers can pass past the types.
        await h.expectBerthError(env().exec(['echo', 42 as unknown as string]), ConfigError);
        const stdin = await h.expectBerthError(env().exec(['cat'], { stdin: 42 as unknown as string }), ConfigError);
        expect(stdin.path).toBe('opts.stdin');
        await h.expectBerthError(env().exec('true', { timeoutMs: 0 }), ConfigError);
        await h.expectBerthError(env().exec('true', { timeoutMs: -5 }), ConfigError);
      },
    });

    h.defineCase({
      id: 'exec.duration',
      title: 'durationMs is sane',
      run: async () => {
        const started = Date.now();
        const r = await env().exec(['sleep', '1']);
        const wall = Date.now() - started;
        expect(r.durationMs).toBeGreaterThanOrEqual(900);
        expect(r.durationMs).toBeLessThanOrEqual(wall + 50);
        // A quick command's own duration: within its wall time, and below the sleeper's (a duration
        // that does not follow the command, a constant say, fails one or the other).
        const quickStarted = Date.now();
        const quick = await env().exec(['true']);
        const quickWall = Date.now() - quickStarted;
        expect(Number.isFinite(quick.durationMs), `durationMs ${quick.durationMs}`).toBe(true);
        expect(quick.durationMs).toBeGreaterThanOrEqual(0);
        expect(quick.durationMs).toBeLessThanOrEqual(quickWall + 50);
        expect(quick.durationMs).toBeLessThan(r.durationMs);
      },
    });
  });

  describe('exec: timeouts and cancellation', () => {
    // Its own environment: these cases kill process trees and count processes.
    const shared = h.sharedEnv();
    const env = (): Environment => shared.env;

    h.defineCase({
      id: 'exec.timeout-tree',
      title: 'timeoutMs kills the whole process tree, even children that ignore SIGTERM',
      run: async () => {
        const marker = 7301;
        const timeoutMs = h.ms(3_000);
        const started = Date.now();
        const running = env().exec(`sh -c 'trap "" TERM; sleep ${marker}1' & sleep ${marker}2; echo never`, { timeoutMs });
        // The probe sees the live tree first (both sleepers): one that matched nothing would pass below.
        expect((await waitForSleepers(env(), marker, 2, timeoutMs - 200)).length).toBeGreaterThanOrEqual(2);
        const r = await running;
        const elapsed = Date.now() - started;
        expect(r.timedOut).toBe(true);
        expect(r.exitCode).not.toBe(0);
        expect(r.stdout).not.toContain('never');
        expect(elapsed).toBeLessThan(timeoutMs + h.ms(5_000));
        expect(r.durationMs).toBeGreaterThanOrEqual(timeoutMs - 50);
        expect(await waitForNoSleepers(env(), marker, h.ms(1_000))).toEqual([]);
        // The sandbox itself survived.
        expect((await env().exec(['echo', 'alive'])).stdout).toBe('alive\n');
      },
    });

    h.defineCase({
      id: 'exec.timeout-not-reached',
      title: 'a command that ends before timeoutMs is not marked timed out',
      run: async () => {
        const r = await env().exec('echo quick', { timeoutMs: h.ms(10_000) });
        expect(r.timedOut).toBe(false);
        expect(r.exitCode).toBe(0);
        expect(r.signal).toBeUndefined();
      },
    });

    h.defineCase({
      id: 'exec.abort',
      title: 'an AbortSignal rejects the exec with CancelledError and kills its process tree',
      run: async () => {
        const marker = 7401;
        const controller = new AbortController();
        const running = env().exec(`sh -c 'trap "" TERM; sleep ${marker}1' & sleep ${marker}2`, { signal: controller.signal });
        running.catch(() => undefined);
        // The probe sees the live tree first; then the caller gives up.
        expect((await waitForSleepers(env(), marker, 2, h.ms(5_000))).length).toBeGreaterThanOrEqual(2);
        const started = Date.now();
        controller.abort(new Error('caller gave up'));
        const error = await h.expectBerthError(running, CancelledError);
        expect(Date.now() - started).toBeLessThan(h.ms(5_000));
        expect(error.category).toBe('cancelled');
        expect(error.retryable).toBe(false);
        expect(await waitForNoSleepers(env(), marker, h.ms(1_000))).toEqual([]);
      },
    });

    h.defineCase({
      id: 'exec.abort-before',
      title: 'an already aborted signal rejects with CancelledError without running the command',
      run: async () => {
        const marker = `/tmp/${uniqueName('abort-marker')}`;
        const controller = new AbortController();
        controller.abort();
        await h.expectBerthError(env().exec(`echo ran > ${marker}`, { signal: controller.signal }), CancelledError);
        const r = await env().exec(`[ -e ${marker} ] && echo exists || echo absent`);
        expect(r.stdout).toBe('absent\n');
      },
    });
  });
}
