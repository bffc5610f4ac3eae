import { randomBytes } from 'node:crypto';
import { ImagePullError, SandboxLostError, ServiceStartError, type Environment, type ServiceInput } from '@berth/core';
import { describe, expect } from 'vitest';
import type { Harness } from '../harness.js';
import { reaches } from './network-probes.js';
import { sleep } from '../harness.js';

// spec.services: containers beside the sandbox, reached by name, started in dependsOn order,
// health awaited, typed when they fail, gone with the sandbox. Each service listens on a port of
// its own: engines that put the services in the sandbox's network namespace (a pod) hold one
// listener per port.

/** A service of the basic image serving `body` (and /uptime: the kernel's clock when it started) over HTTP on `port`. */
function httpService(h: Harness, port: number, body: string, extra: Partial<ServiceInput> = {}, before = 'true'): ServiceInput {
  return {
    image: h.options.images.basic,
    command: [
      'sh',
      '-c',
      `mkdir -p /www && cut -d' ' -f1 /proc/uptime > /www/uptime && ${before} && printf %s '${body}' > /www/index.html && exec httpd -f -p ${port} -h /www`,
    ],
    ports: [port],
    ...extra,
  };
}

/** GET http://host:port/path from inside `env` (busybox wget): the body, or undefined when it failed. */
async function fetchFrom(env: Environment, host: string, port: number, path = ''): Promise<string | undefined> {
  const r = await env.exec(['timeout', '10', 'wget', '-q', '-O', '-', `http://${host}:${port}/${path}`], { timeoutMs: 20_000 });
  return r.exitCode === 0 ? r.stdout : undefined;
}

export function serviceCases(h: Harness): void {
  describe('services', () => {
    h.defineCase({
      id: 'services.reachable',
      title: 'a sandbox reaches its services by name and by alias; a service reaches another by name; start() resolves with them up',
      timeoutMs: 120_000,
      run: async () => {
        await h.withEnv(
          {
            services: {
              db: httpService(h, 18081, 'db-here'),
              api: httpService(h, 18082, 'api-here', { aliases: ['api-alias'] }),
              // Asks db at its start (dependsOn: db started, then retried until it answers) and serves what it got.
              relay: {
                image: h.options.images.basic,
                command: [
                  'sh',
                  '-c',
                  'mkdir -p /www && for i in $(seq 1 50); do timeout 3 wget -q -O /www/index.html http://db:18081/ && break; sleep 0.2; done; exec httpd -f -p 18083 -h /www',
                ],
                ports: [18083],
                dependsOn: { db: 'started' },
                healthcheck: { command: ['sh', '-c', 'test -s /www/index.html'], intervalMs: 200, retries: 100 },
              },
            },
          },
          async (env) => {
            expect(await fetchFrom(env, 'db', 18081)).toBe('db-here');
            expect(await fetchFrom(env, 'api', 18082)).toBe('api-here');
            expect(await fetchFrom(env, 'api-alias', 18082), 'an alias reaches its service').toBe('api-here');
            expect(await fetchFrom(env, 'relay', 18083), 'a service reached another by name').toBe('db-here');
            expect((await env.exec('echo still a sandbox')).stdout).toBe('still a sandbox\n');
          },
        );
      },
    });

    h.defineCase({
      id: 'services.order',
      title: "dependsOn is kept: a service waiting for another's health starts after its healthcheck passed, one waiting for a one-shot after it exited 0",
      timeoutMs: 120_000,
      run: async () => {
        await h.withEnv(
          {
            services: {
              // Healthy only 2 s after it started.
              slow: httpService(
                h,
                18084,
                'slow',
                { healthcheck: { command: ['test', '-f', '/tmp/ready'], intervalMs: 250, retries: 100 } },
                '{ (sleep 2; touch /tmp/ready) & }',
              ),
              // A one-shot that takes 1 s.
              setup: { image: h.options.images.basic, command: ['sh', '-c', 'sleep 1; exit 0'] },
              late: httpService(h, 18085, 'late', { dependsOn: { slow: 'healthy', setup: 'completed' } }),
            },
          },
          async (env) => {
            const slow = Number(await fetchFrom(env, 'slow', 18084, 'uptime'));
            const late = Number(await fetchFrom(env, 'late', 18085, 'uptime'));
            expect(Number.isFinite(slow) && Number.isFinite(late), `uptimes ${slow} ${late}`).toBe(true);
            expect(late - slow, 'late started before slow was healthy (2 s after its start)').toBeGreaterThanOrEqual(1.9);
            // The one-shot is done and not a loss: the sandbox works on.
            expect((await env.exec('true')).exitCode).toBe(0);
            expect(await fetchFrom(env, 'late', 18085)).toBe('late');
          },
        );
      },
    });

    h.defineCase({
      id: 'services.start-failures',
      title:
        'a service that never gets healthy is a transient ServiceStartError naming it with its last log lines; one that exits is a permanent one; a missing image an ImagePullError naming the service',
      needs: ['images.missing'],
      timeoutMs: 180_000,
      run: async () => {
        const never = await h.expectBerthError(
          h.start({
            services: {
              sick: {
                image: h.options.images.basic,
                command: ['sh', '-c', 'echo sick-service-says-hello; exec sleep 100000'],
                healthcheck: { command: ['false'], intervalMs: 200, retries: 3 },
              },
            },
          }),
          ServiceStartError,
        );
        expect(never.service).toBe('sick');
        expect(never.reason).toBe('unhealthy');
        expect(never.category).toBe('transient_infra');
        expect(never.logTail).toContain('sick-service-says-hello');
        expect(never.message).toContain('service sick');

        const exits = await h.expectBerthError(
          h.start({
            services: {
              crash: {
                image: h.options.images.basic,
                command: ['sh', '-c', 'echo crash-service-gives-up; exit 3'],
                healthcheck: { command: ['true'], intervalMs: 1000, startPeriodMs: 5000, retries: 3 },
              },
            },
          }),
          ServiceStartError,
        );
        expect(exits.service).toBe('crash');
        expect(exits.reason).toBe('exited');
        expect(exits.category).toBe('permanent_infra');
        expect(exits.logTail).toContain('crash-service-gives-up');

        const missing = await h.expectBerthError(
          h.start({
            services: {
              // A command of its own: on Modal, which never runs an image's CMD, one is required.
              gone: {
                image: h.options.images.private ? { ref: h.options.images.missing!, auth: h.options.images.private.auth } : h.options.images.missing!,
                command: ['true'],
              },
            },
          }),
          ImagePullError,
        );
        expect(missing.reason).toBe('not_found');
        expect(missing.message).toContain('service gone');
        // What the failed starts made is checked by cleanup.no-leftovers, with everything else.
      },
    });

    h.defineCase({
      id: 'services.private-image',
      title: "a service's private image is pulled with its own credentials (as the sandbox's is) and runs",
      needs: ['images.private'],
      timeoutMs: 120_000,
      run: async () => {
        const { ref, auth } = h.options.images.private!;
        // Not already on the engine: the pull with the credentials is what is tested.
        await h.options.faults?.forgetImage?.(ref);
        await h.withEnv({ services: { vault: { ...httpService(h, 18088, 'from-the-private-image'), image: { ref, auth } } } }, async (env) => {
          expect(await fetchFrom(env, 'vault', 18088)).toBe('from-the-private-image');
        });
      },
    });

    h.defineCase({
      id: 'services.allowlist',
      title: 'under an allowlist the sandbox still reaches its services by name, and the allowed address, but not another',
      unsupported: () =>
        h.options.reachableListener && h.options.secondListener && h.backend().capabilities.networkAllowlist !== false
          ? undefined
          : 'needs options.reachableListener, options.secondListener and the networkAllowlist capability',
      timeoutMs: 120_000,
      run: async () => {
        const allowed = await h.options.reachableListener!();
        const other = await h.options.secondListener!();
        try {
          await h.withEnv({ network: { allow: [allowed.host] }, services: { db: httpService(h, 18089, 'db') } }, async (env) => {
            expect(await fetchFrom(env, 'db', 18089), 'the sandbox did not reach its service under an allowlist').toBe('db');
            expect(await reaches(env, allowed), 'the allowed address was not reached').toBe(true);
            expect(await reaches(env, other), 'an address the allowlist does not list was reached').toBe(false);
          });
        } finally {
          await allowed.close();
          await other.close();
        }
      },
    });

    h.defineCase({
      id: 'services.volume',
      title:
        "a volume shared by the sandbox and a service (compose's named volume, read-only in the service): what the sandbox writes there the service serves",
      timeoutMs: 120_000,
      run: async () => {
        await h.withEnv(
          {
            mounts: [{ type: 'volume', name: 'shared', target: '/shared' }],
            services: {
              web: {
                image: h.options.images.basic,
                command: ['httpd', '-f', '-p', '18090', '-h', '/www'],
                ports: [18090],
                mounts: [{ type: 'volume', name: 'shared', target: '/www', readOnly: true }],
              },
            },
          },
          async (env) => {
            expect((await env.exec('printf from-the-sandbox > /shared/index.html')).exitCode).toBe(0);
            expect(await fetchFrom(env, 'web', 18090), 'the service did not see what the sandbox wrote into the volume').toBe('from-the-sandbox');
          },
        );
      },
    });

    h.defineCase({
      id: 'services.lost',
      title:
        "a service killed while the sandbox runs: the sandbox's next failing command, or its next command once the backend saw it, is a SandboxLostError naming the service",
      needs: ['faults.killService'],
      timeoutMs: 120_000,
      run: async () => {
        await h.withEnv({ services: { db: httpService(h, 18086, 'db') } }, async (env) => {
          expect(await fetchFrom(env, 'db', 18086)).toBe('db');
          await h.options.faults!.killService!(env, 'db');
          // An engine that restarts the service (a pod's sidecar) may answer the next command from
          // the new one: the loss then comes as soon as the backend sees the restart.
          const deadline = Date.now() + h.ms(15_000);
          let outcome: unknown;
          for (;;) {
            outcome = await env.exec(['timeout', '5', 'wget', '-q', '-O', '-', 'http://db:18086/']).catch((e: unknown) => e);
            if (outcome instanceof Error || Date.now() > deadline) break;
            await sleep(200);
          }
          const error = await h.expectBerthError(Promise.reject(outcome), SandboxLostError);
          expect(error.message).toContain('service db');
          expect(error.category).toBe('transient_infra');
          expect(env.phase).toBe('lost');
        });
      },
    });

    h.defineCase({
      id: 'services.network-none',
      title: "network 'none' isolates the group: the sandbox reaches its services but not a listener a public sandbox reaches, and neither does a service",
      unsupported: () => (h.options.reachableListener ? undefined : 'needs options.reachableListener'),
      timeoutMs: 120_000,
      run: async () => {
        const listener = await h.options.reachableListener!();
        try {
          const probe = (token: string): ServiceInput => ({
            image: h.options.images.basic,
            command: ['sh', '-c', `printf %s ${token} | nc -w 3 ${listener.host} ${listener.port}; exit 0`],
          });
          const run = async (network: 'none' | 'public') => {
            const token = `berth-svc-${randomBytes(6).toString('hex')}`;
            const main = `berth-main-${randomBytes(6).toString('hex')}`;
            await h.withEnv(
              { network, services: { probe: probe(token), db: httpService(h, 18087, 'db', { dependsOn: { probe: 'completed' } }) } },
              async (env) => {
                expect(await fetchFrom(env, 'db', 18087), `network ${network}: the sandbox did not reach its service`).toBe('db');
                await env.exec(`printf %s ${main} | nc -w 3 ${listener.host} ${listener.port}`, { timeoutMs: 15_000 });
              },
            );
            // The probe ran to its end before start() resolved; what reached the listener is in.
            await sleep(200);
            return { service: listener.received(token), sandbox: listener.received(main) };
          };
          if (h.backend().capabilities.networkModes.includes('public')) {
            expect(await run('public'), 'a public group must reach the listener (else the check below proves nothing)').toEqual({
              service: true,
              sandbox: true,
            });
          }
          expect(await run('none'), "a group on network 'none' reached the listener").toEqual({ service: false, sandbox: false });
        } finally {
          await listener.close();
        }
      },
    });
  });
}
