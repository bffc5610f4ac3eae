// A container removed at each point of an exec where the engine's answer can arrive (the exec's
// create, its start, and the inspect that reads its exit code after the output ended): the engine's
// own 404 ("No such container", "No such exec instance") must reach the caller as the sandbox lost,
// transient and retried, never an unclassified error (chaos saw `(HTTP code 404) no such exec`).
// A socket in front of the real engine removes the container just before it forwards the chosen
// request, so every answer is the engine's exact one.
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { SandboxLostError, classifyFailure, type Environment } from '@berth/core';
import { createDockerBackend } from '@berth/backend-docker';

const BASIC = 'berth-test/busybox:latest';
const ENGINE = '/var/run/docker.sock';
const docker = new Docker();
const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

type Point = 'exec create' | 'exec start' | 'exit code';
const REQUEST: Record<Point, RegExp> = {
  'exec create': /^POST \S*\/containers\/[^/]+\/exec /,
  'exec start': /^POST \S*\/exec\/[^/]+\/start /,
  'exit code': /^GET \S*\/exec\/[^/]+\/json /,
};

/** The engine's socket, except that the first request matching `point` once armed waits for the container's removal. */
async function removingAt(point: Point): Promise<{ socketPath: string; arm: (container: string) => void; answers: string[]; close: () => void }> {
  const dir = await mkdtemp(join(tmpdir(), 'berth-vanish-'));
  dirs.push(dir);
  let armed: string | undefined;
  const answers: string[] = [];
  const open = new Set<Socket>();
  const server = createServer((client) => {
    const engine = connect(ENGINE);
    open.add(client).add(engine);
    let hooked = false;
    client.on('data', (chunk) => {
      const head = chunk.toString('latin1');
      if (armed !== undefined && REQUEST[point].test(head)) {
        const container = armed;
        armed = undefined;
        hooked = true;
        client.pause();
        void docker
          .getContainer(container)
          .remove({ force: true })
          .finally(() => {
            engine.write(chunk);
            client.resume();
          });
        return;
      }
      engine.write(chunk);
    });
    engine.on('data', (chunk) => {
      if (hooked) {
        hooked = false;
        answers.push(chunk.toString('latin1').split('\r\n')[0]!);
      }
      client.write(chunk);
    });
    client.on('close', () => engine.destroy());
    engine.on('close', () => client.destroy());
    client.on('error', () => undefined);
    engine.on('error', () => undefined);
  });
  const socketPath = join(dir, 'docker.sock');
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return {
    socketPath,
    arm: (container) => {
      armed = container;
    },
    answers,
    close: () => {
      for (const s of open) s.destroy();
      server.close();
    },
  };
}

describe('a container removed during an exec', () => {
  for (const point of ['exec create', 'exec start', 'exit code'] as const) {
    it(`at the ${point}: the engine's 404 is SandboxLostError, transient and retryable`, async () => {
      const proxy = await removingAt(point);
      let env: Environment | undefined;
      try {
        env = await createDockerBackend({ socketPath: proxy.socketPath, guardian: false }).start({ image: BASIC, network: 'none' });
        expect((await env.exec('echo before')).stdout).toBe('before\n');
        proxy.arm(env.id);
        const error = await env.exec('echo during').catch((e: unknown) => e);
        // The engine did answer, and with a 404 of its own.
        expect(proxy.answers, `${point}: the engine's answer`).toEqual([expect.stringMatching(/^HTTP\/1\.1 404 /)]);
        expect(SandboxLostError.isInstance(error), `${point}: ${String(error)}`).toBe(true);
        expect(classifyFailure(error)).toMatchObject({ category: 'transient_infra', type: 'SandboxLostError', retryable: true, unclassified: false });
        expect((error as SandboxLostError).lastState).toBe('removed');
        expect(env.phase).toBe('lost');
      } finally {
        // Through the proxy while it is up (the container is gone: nothing to remove but to ask).
        await env?.teardown();
        proxy.close();
      }
    });
  }
});
