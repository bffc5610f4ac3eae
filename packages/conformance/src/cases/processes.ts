import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConfigError, SandboxLostError, type Environment } from '@berth/core';
import { describe, expect } from 'vitest';
import type { Harness } from '../harness.js';

/** Until `check` holds (polled), or fails the case after `ms`. */
async function eventually(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`not within ${ms} ms: ${what}`);
    await sleep(100);
  }
}

const running = async (env: Environment, id: string) => (await env.processes()).find((p) => p.id === id)?.running === true;

export function processCases(h: Harness): void {
  describe('detached processes', () => {
    h.defineCase({
      id: 'processes.spawn-survives',
      title:
        'spawn() returns while the process runs; it runs on after its handle is detached and other execs ran; processes() lists it; attach() replays its earlier output and follows it live; kill() ends it (143)',
      timeoutMs: 120_000,
      run: async () => {
        await h.withEnv({}, async (env) => {
          const first = await env.spawn('echo started; echo oops >&2; i=0; while :; do i=$((i+1)); echo tick $i; sleep 0.2; done');
          expect(first.id).toMatch(/^p-[0-9a-f]{12}$/);
          first.detach();
          await expect(first.wait()).rejects.toMatchObject({ name: 'CancelledError' });
          expect((await env.exec('echo other work')).stdout).toBe('other work\n');
          expect(await running(env, first.id), 'the process was not running after its handle was detached').toBe(true);
          expect((await env.processes()).find((p) => p.id === first.id)?.command).toEqual(['/bin/sh', '-c', expect.stringContaining('tick')]);
          const seen: string[] = [];
          const again = await env.attach(first.id, { onStdout: (c) => seen.push(Buffer.from(c).toString()) });
          await eventually(async () => /tick \d+\n[\s\S]*tick \d+/.test(seen.join('')), h.ms(20_000), 'attach() followed the process live');
          await again.kill();
          const exit = await again.wait();
          expect(exit.exitCode).toBe(143);
          expect(exit.stdout.startsWith('started\ntick 1\n'), 'attach() replays the output since its start').toBe(true);
          // A shell may report its child's end ("Terminated") after it.
          expect(exit.stderr.startsWith('oops\n'), exit.stderr).toBe(true);
          expect(await env.processes()).toEqual([expect.objectContaining({ id: first.id, running: false, exitCode: 143 })]);
          // A short replay: only the tail of what it printed.
          const tail = await env.attach(first.id, { replayBytes: 7 });
          expect((await tail.wait()).stdout).toBe(exit.stdout.slice(-7));
        });
      },
    });

    h.defineCase({
      id: 'processes.exit-and-kill',
      title: "wait() gives the exit status and both streams; kill('KILL') ends a process that ignores TERM (137); a bad signal or id is a ConfigError",
      timeoutMs: 90_000,
      run: async () => {
        await h.withEnv({}, async (env) => {
          const done = await env.spawn(['/bin/sh', '-c', 'echo out; echo err >&2; exit 3']);
          expect(await done.wait()).toEqual({ exitCode: 3, stdout: 'out\n', stderr: 'err\n' });
          const stubborn = await env.spawn('trap "" TERM; echo ready; while :; do sleep 1; done');
          await stubborn.kill('TERM');
          await sleep(500);
          expect(await running(env, stubborn.id), 'TERM, which it ignores, ended it').toBe(true);
          await stubborn.kill('KILL');
          expect((await stubborn.wait()).exitCode).toBe(137);
          await h.expectBerthError(stubborn.kill('NOT A SIGNAL'), ConfigError);
          await h.expectBerthError(env.attach('p-000000000000'), ConfigError);
          await h.expectBerthError(env.attach('../../etc'), ConfigError);
        });
      },
    });

    h.defineCase({
      id: 'processes.stdin',
      title:
        'a process spawned with stdin: true reads what write() sends, in order, and end of input at end(); one without stdin refuses write() with a ConfigError',
      timeoutMs: 90_000,
      run: async () => {
        await h.withEnv({}, async (env) => {
          const reader = await env.spawn('while read -r line; do echo "got $line"; done; echo eof', { stdin: true });
          await reader.write('one\n');
          await reader.write(new TextEncoder().encode('two\nthree\n'));
          await reader.end();
          expect(await reader.wait()).toMatchObject({ exitCode: 0, stdout: 'got one\ngot two\ngot three\neof\n' });
          const closed = await env.spawn('sleep 30');
          await h.expectBerthError(closed.write('x'), ConfigError);
          await closed.kill('KILL');
          await closed.wait();
        });
      },
    });

    h.defineCase({
      id: 'processes.port',
      title:
        "port(n) gives a local address reaching a server a detached process started on the sandbox's 127.0.0.1:n, byte for byte (1 MiB of random bytes), with network 'none' where the backend has it; it refuses after teardown; a bad port is a ConfigError",
      timeoutMs: 120_000,
      run: async () => {
        const offline = h.backend().capabilities.networkModes.includes('none');
        const env = await h.start(offline ? { network: 'none' } : {});
        try {
          await env.exec('mkdir -p /tmp/www && echo hello from inside > /tmp/www/index.html && head -c 1048576 /dev/urandom > /tmp/www/blob');
          const sum = (await env.exec('sha256sum /tmp/www/blob')).stdout.split(' ')[0];
          const server = await env.spawn('exec httpd -f -p 127.0.0.1:8080 -h /tmp/www');
          const forward = await env.port(8080);
          expect(forward).toMatchObject({ host: '127.0.0.1', remotePort: 8080 });
          const url = `http://${forward.host}:${forward.port}`;
          let page = '';
          await eventually(
            async () => {
              page = await fetch(`${url}/index.html`).then(
                (r) => r.text(),
                () => '',
              );
              return page === 'hello from inside\n';
            },
            h.ms(20_000),
            `the server in the sandbox answered through port(): got ${JSON.stringify(page)}`,
          );
          const blob = Buffer.from(await (await fetch(`${url}/blob`)).arrayBuffer());
          expect(blob.length).toBe(1048576);
          expect(createHash('sha256').update(blob).digest('hex'), 'the bytes changed on the way').toBe(sum);
          await h.expectBerthError(env.port(0), ConfigError);
          await server.kill();
          await env.teardown();
          const after = await fetch(`${url}/index.html`).then(
            () => 'answered',
            (e: { cause?: { code?: string } }) => e.cause?.code ?? 'failed',
          );
          expect(after, 'the forward still answered after teardown').toBe('ECONNREFUSED');
        } finally {
          await env.teardown();
        }
      },
    });

    h.defineCase({
      id: 'processes.lost',
      title:
        "a sandbox lost under a detached process fails its handle's wait() and every later call with SandboxLostError; after teardown, processes() refuses",
      needs: ['faults.kill'],
      timeoutMs: 90_000,
      run: async () => {
        await h.withEnv({}, async (env) => {
          const proc = await env.spawn('sleep 300', { stdin: true });
          const fault = h.options.faults?.kill;
          if (!fault) throw new Error('faults.kill is required');
          await fault(env);
          await h.expectBerthError(proc.wait(), SandboxLostError);
          await h.expectBerthError(proc.write('x'), SandboxLostError);
          await h.expectBerthError(env.processes(), SandboxLostError);
        });
        const env = await h.start();
        await env.spawn('sleep 300');
        await env.teardown();
        await expect(env.processes()).rejects.toMatchObject({ environmentId: env.id });
      },
    });
  });
}
