import { join } from 'node:path';
import { writeFile } from 'node:fs/promises';
import { ConfigError, type Environment, type EnvironmentPhase, type EnvironmentSpecInput } from '@berth/core';
import { describe, expect } from 'vitest';
import { describeError, type Harness } from '../harness.js';
import { poolWatch } from '../pool-watch.js';

/** Values with spaces, quotes and shell metacharacters: they must arrive verbatim. */
export const SPEC_ENV = { BERTH_CONF_PLAIN: 'plain', BERTH_CONF_TRICKY: `two words $HOME "q" 'a' ;|&` };
export const SPEC_WORKDIR = '/tmp/berth-conformance-workdir';

export function lifecycleCases(h: Harness): void {
  describe('lifecycle', () => {
    h.defineCase({
      id: 'lifecycle.target',
      title: 'backend.target says where sandboxes go, the same each time, with no credentials in it (a resumed run compares it)',
      run: async () => {
        const backend = h.backend();
        const target = backend.target;
        expect(typeof target).toBe('string');
        expect(target.trim().length).toBeGreaterThan(0);
        expect(backend.target).toBe(target);
        // A URL's userinfo is where a secret would hide; berth's words never carry one.
        expect(target).not.toMatch(/\/\/[^/\s]*:[^/\s]*@/);
        expect(target).not.toMatch(/token|secret|password/i);
      },
    });

    h.defineCase({
      id: 'lifecycle.start',
      title: "environment() gives a 'created' environment; start() brings it to phase running, with phase events",
      run: async () => {
        const backend = h.backend();
        const env = h.track(backend.environment(h.spec()));
        try {
          expect(env.phase).toBe('created');
          expect(env.backend).toBe(h.name);
          expect(typeof env.id).toBe('string');
          expect(env.id.length).toBeGreaterThan(0);
          const phases: EnvironmentPhase[] = [];
          env.events.on('phase', (phase) => phases.push(phase));
          await env.start();
          expect(env.phase).toBe('running');
          // In order: the start's work (starting, or pulling/building first), then running, once, last.
          expect(phases[0], `phase events ${phases.join(' → ')}`).toMatch(/^(pulling|building|starting)$/);
          expect(
            phases.filter((p) => p === 'running'),
            `phase events ${phases.join(' → ')}`,
          ).toEqual(['running']);
          expect(phases.at(-1), `phase events ${phases.join(' → ')}`).toBe('running');
          // start() again is harmless.
          await env.start();
          expect(env.phase).toBe('running');
          const r = await env.exec(['echo', 'alive']);
          expect(r.stdout).toBe('alive\n');
        } finally {
          await h.release(env);
        }
        expect(env.phase).toBe('stopped');
      },
    });

    h.defineCase({
      id: 'lifecycle.backend-start',
      title: 'backend.start(spec) returns a running environment',
      run: async () => {
        const env = h.track(await h.backend().start(h.spec()));
        try {
          expect(env.phase).toBe('running');
          expect(env.backend).toBe(h.name);
          expect(env.spec.image).toMatchObject({ ref: h.options.images.basic });
          expect((await env.exec('echo ok')).stdout).toBe('ok\n');
        } finally {
          await h.release(env);
        }
      },
    });

    h.defineCase({
      id: 'lifecycle.teardown-idempotent',
      title: 'teardown twice, and twice at once, is fine',
      run: async () => {
        const env = await h.start();
        await env.teardown();
        expect(env.phase).toBe('stopped');
        await env.teardown();
        await Promise.all([env.teardown(), env.teardown()]);
        expect(env.phase).toBe('stopped');
        await h.release(env);
        // A never-started environment can be torn down too.
        const unstarted = h.backend().environment(h.spec());
        await unstarted.teardown();
        await unstarted.teardown();
      },
    });

    h.defineCase({
      id: 'lifecycle.async-dispose',
      title: '`await using` (Symbol.asyncDispose) tears down, also when the block throws',
      run: async () => {
        let kept: Environment | undefined;
        {
          await using env = h.track(await h.backend().start(h.spec()));
          kept = env;
          expect((await env.exec('echo inside')).stdout).toBe('inside\n');
        }
        expect(kept.phase).toBe('stopped');
        await h.expectBerthError(kept.exec('echo after'));

        const holder: { env?: Environment } = {};
        await expect(
          (async () => {
            await using env = h.track(await h.backend().start(h.spec()));
            holder.env = env;
            throw new Error('boom inside the block');
          })(),
        ).rejects.toThrow('boom inside the block');
        const thrown = holder.env;
        expect(thrown?.phase).toBe('stopped');

        const left = await h.leftovers('lifecycle.async-dispose');
        if (left) {
          expect(left).not.toContain(kept.id);
          if (thrown) expect(left).not.toContain(thrown.id);
        }
        await h.release(kept);
        if (thrown) await h.release(thrown);
      },
    });

    h.defineCase({
      id: 'lifecycle.env-limits',
      title: 'a large environment within the limits reaches every command; one over them is a ConfigError naming the limit',
      run: async () => {
        const big = 'v'.repeat(100 * 1024);
        await h.withEnv({ env: { BIG: big } }, async (env) => {
          expect((await env.exec('printf %s "$BIG" | wc -c')).stdout.trim()).toBe(String(big.length));
          const error = await h.expectBerthError(env.exec('true', { env: { MORE: 'w'.repeat(200 * 1024) } }), ConfigError);
          expect(error.path).toBe('opts.env.MORE');
          expect(error.message).toMatch(/MAX_ARG_STRLEN/);
        });
      },
    });

    h.defineCase({
      id: 'lifecycle.invalid-spec',
      title: 'an invalid spec is a ConfigError naming the field, before any I/O',
      run: async () => {
        const image = h.options.images.basic;
        const bad: Array<[string, unknown]> = [
          ['resources.cpus', { image, resources: { cpus: -1 } }],
          ['image', { image: '' }],
          ['workdir', { image, workdir: 'relative/dir' }],
          ['env', { image, env: { '1BAD': 'x' } }],
          ['network', { image, network: 'bogus' }],
          ['unknownField', { image, unknownField: true }],
          ['image.auth', { image: { ref: image, auth: { user: 'u', password: 'p4ssword-typo' } } }],
          // Limits the kernel would impose at start: refused up front, naming the limit.
          ['env.HUGE', { image, env: { HUGE: 'x'.repeat(200 * 1024) } }],
          ['env', { image, env: Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`V${i}`, 'y'.repeat(100 * 1024)])) }],
        ];
        const before = await h.leftovers('lifecycle.invalid-spec');
        for (const [field, input] of bad) {
          const spec = input as EnvironmentSpecInput;
          // environment() validates synchronously: a throw here has done no I/O.
          let syncError: unknown;
          try {
            h.track(h.backend().environment(spec));
          } catch (error) {
            syncError = error;
          }
          expect(ConfigError.isInstance(syncError), `environment(${JSON.stringify(input)}) must throw a ConfigError synchronously`).toBe(true);
          const error = await h.expectStartFailure(spec, ConfigError);
          expect(`${error.path ?? ''} ${error.message}`, `the error should name ${field}`).toContain(field);
          expect(error.category).toBe('permanent_infra');
          expect(error.retryable).toBe(false);
        }
        if (before) expect(await h.leftovers('lifecycle.invalid-spec')).toEqual(before);
      },
    });

    describe('with a shared environment', () => {
      const shared = h.sharedEnv({ env: SPEC_ENV, workdir: SPEC_WORKDIR });

      h.defineCase({
        id: 'lifecycle.spec-env-workdir',
        title: 'spec env and workdir apply to every exec; exec options override them',
        run: async () => {
          const env = shared.env;
          expect((await env.exec('pwd')).stdout).toBe(`${SPEC_WORKDIR}\n`);
          expect((await env.exec(['pwd'])).stdout).toBe(`${SPEC_WORKDIR}\n`);
          const r = await env.exec('printf "%s|%s" "$BERTH_CONF_PLAIN" "$BERTH_CONF_TRICKY"');
          expect(r.stdout).toBe(`${SPEC_ENV.BERTH_CONF_PLAIN}|${SPEC_ENV.BERTH_CONF_TRICKY}`);
          const overridden = await env.exec('printf "%s" "$BERTH_CONF_PLAIN"', { env: { BERTH_CONF_PLAIN: 'override' } });
          expect(overridden.stdout).toBe('override');
          expect((await env.exec('pwd', { cwd: '/' })).stdout).toBe('/\n');
        },
      });
    });

    h.defineCase({
      id: 'lifecycle.before-start',
      title: 'exec and transfers before start() reject clearly',
      run: async () => {
        const dir = await h.tempDir('before-start');
        const local = join(dir, 'file.txt');
        await writeFile(local, 'x');
        const env = h.track(h.backend().environment(h.spec()));
        const errors = [
          await h.expectBerthError(env.exec('echo never')),
          await h.expectBerthError(env.uploadFile(local, '/tmp/never.txt')),
          await h.expectBerthError(env.downloadFile('/etc/passwd', join(dir, 'never.txt'))),
        ];
        for (const error of errors) expect(error.message).toMatch(/start/i);
        await h.release(env);
      },
    });

    h.defineCase({
      id: 'lifecycle.after-teardown',
      title: 'exec and transfers after teardown reject with a BerthError saying it was torn down',
      run: async () => {
        const dir = await h.tempDir('after-teardown');
        const local = join(dir, 'file.txt');
        await writeFile(local, 'x');
        const env = await h.start();
        await h.release(env);
        const errors = [
          await h.expectBerthError(env.exec('echo never')),
          await h.expectBerthError(env.exec(['echo', 'never'])),
          await h.expectBerthError(env.uploadFile(local, '/tmp/never.txt')),
          await h.expectBerthError(env.downloadFile('/etc/passwd', join(dir, 'never.txt'))),
          await h.expectBerthError(env.uploadDir(dir, '/tmp/never')),
          await h.expectBerthError(env.downloadDir('/etc', join(dir, 'never'))),
        ];
        for (const error of errors) expect(error.message).toMatch(/torn down/i);
      },
    });

    h.defineCase({
      id: 'lifecycle.parallel-start',
      title: 'four environments started at once are distinct and independent',
      timeoutMs: 60_000,
      run: async () => {
        const envs = await Promise.all(Array.from({ length: 4 }, () => h.start()));
        try {
          expect(new Set(envs.map((e) => e.id)).size).toBe(4);
          await Promise.all(envs.map((env, i) => env.exec(`echo ${i} > /tmp/berth-which`)));
          const seen = await Promise.all(envs.map((env) => env.exec(['cat', '/tmp/berth-which'])));
          expect(seen.map((r) => r.stdout)).toEqual(['0\n', '1\n', '2\n', '3\n']);
        } finally {
          await Promise.all(envs.map((env) => h.release(env)));
        }
      },
    });

    h.defineCase({
      id: 'lifecycle.teardown-during-start',
      title: 'teardown while start() is in flight leaves nothing behind, and start() settles',
      run: async () => {
        // In a pooled run env.id stays the provisional id when teardown comes during the claim,
        // and the pool refills: what counts is every sandbox that appeared, less those a pool holds idle.
        const pools = poolWatch(h);
        const before = new Set((await h.leftovers('lifecycle.teardown-during-start')) ?? []);
        for (const delayMs of [0, 50]) {
          const env = h.track(h.backend().environment(h.spec()));
          const starting = env.start();
          starting.catch(() => undefined);
          pools.watch();
          await new Promise((resolve) => setTimeout(resolve, delayMs));
          await env.teardown();
          expect(env.phase).toBe('stopped');
          try {
            await starting;
          } catch (error) {
            // Either outcome is fine, but a rejection must be a proper BerthError.
            await h.expectBerthError(Promise.reject(error));
          }
          expect(env.phase).toBe('stopped');
          await h.expectBerthError(env.exec('true'));
          await pools.settled(h.ms(60_000));
          const left = await h.leftovers('lifecycle.teardown-during-start');
          if (left) {
            const held = pools.idle();
            expect(
              left.filter((id) => !before.has(id) && !held.has(id)),
              'sandboxes that appeared during the case, less those a pool holds idle',
            ).toEqual([]);
          }
          await h.release(env);
        }
      },
    });

    h.defineCase({
      id: 'lifecycle.teardown-during-exec',
      title: 'teardown while an exec runs settles the exec at once, without reporting a lost sandbox',
      run: async () => {
        const env = await h.start();
        const lost: string[] = [];
        env.events.on('lost', (reason) => lost.push(reason));
        let signalStarted!: () => void;
        const started = new Promise<void>((resolve) => (signalStarted = resolve));
        const running = env.exec('echo started; sleep 30', { onStdout: () => signalStarted() });
        running.catch(() => undefined);
        await Promise.race([started, running]);
        const tornAt = Date.now();
        await h.release(env);
        const error = await h.expectBerthError(running);
        expect(Date.now() - tornAt).toBeLessThan(h.ms(5_000));
        expect(error.category, describeError(error)).not.toBe('transient_infra');
        expect(error.message).toMatch(/torn down|cancel/i);
        expect(lost, 'no lost event for a deliberate teardown').toEqual([]);
        expect(env.phase).toBe('stopped');
      },
    });
  });
}
