// Teardown against the real engine (issue 17, item 7): with the daemon's socket missing nothing was
// created, so teardown asks the engine nothing (it used to retry the removal for 16-18 s); when the
// create request reached the engine and only its answer was lost, the container exists, and
// teardown still removes it.
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import Modem from 'docker-modem';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { BackendUnavailableError, type EnvironmentPhase } from '@berth/core';
import { createDockerBackend } from '@berth/backend-docker';

const BASIC = 'berth-test/busybox:latest';
const ENGINE = '/var/run/docker.sock';
const docker = new Docker();
const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

function phasesOf(env: { events: { on(e: 'phase', f: (p: EnvironmentPhase, d?: string) => void): unknown } }) {
  const phases: Array<[EnvironmentPhase, string | undefined]> = [];
  env.events.on('phase', (phase, detail) => phases.push([phase, detail]));
  return phases;
}

/**
 * A socket in front of the engine that forwards everything, except that the engine's answer to the
 * first container create is dropped and the connection cut: the container is made, berth never hears.
 */
async function losingCreateAnswers(): Promise<{ socketPath: string; lostAnswer: () => string | undefined; close: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'berth-lossy-'));
  dirs.push(dir);
  let armed = false;
  let lost: string | undefined;
  const open = new Set<Socket>();
  const server = createServer((client) => {
    const engine = connect(ENGINE);
    open.add(client).add(engine);
    client.on('data', (chunk) => {
      if (lost === undefined && /^POST \S*\/containers\/create/.test(chunk.toString('latin1'))) armed = true;
      engine.write(chunk);
    });
    engine.on('data', (chunk) => {
      if (!armed) return void client.write(chunk);
      armed = false;
      lost = chunk.toString('latin1').split('\r\n')[0];
      client.destroy();
      engine.destroy();
    });
    client.on('close', () => engine.destroy());
    engine.on('close', () => client.destroy());
    client.on('error', () => undefined);
    engine.on('error', () => undefined);
  });
  const socketPath = join(dir, 'docker.sock');
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  // Closed with the kept-alive connections of the client's agent, which would hold close() for seconds.
  const close = async () => {
    for (const socket of open) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return { socketPath, lostAnswer: () => lost, close };
}

describe('docker teardown after a failed start', () => {
  it('daemon socket missing: start rejects with BackendUnavailableError, teardown asks the engine nothing', async () => {
    expect(existsSync('/tmp/nonexistent.sock')).toBe(false);
    const backend = createDockerBackend({ socketPath: '/tmp/nonexistent.sock' });
    // Every engine call goes through docker-modem's dial (the client is the backend's own): counted, and passed on unchanged.
    const dial = vi.spyOn(Modem.prototype, 'dial');
    const env = backend.environment({ image: BASIC, network: 'none' });
    const phases = phasesOf(env);
    const error = await env.start().catch((e: unknown) => e);
    expect(BackendUnavailableError.isInstance(error), String(error)).toBe(true);
    const calls = dial.mock.calls.length;
    expect(calls).toBeGreaterThan(0);
    await env.teardown();
    expect(dial.mock.calls.length).toBe(calls);
    expect(env.phase).toBe('stopped');
    expect(phases.at(-1)).toEqual(['stopped', expect.stringMatching(/never created/)]);

    // backend.start() tears down what a failed start made: here nothing, so no removal is sent.
    await expect(backend.start({ image: BASIC, network: 'none' })).rejects.toSatisfy((e) => BackendUnavailableError.isInstance(e));
    expect(dial.mock.calls.filter(([options]) => options.method === 'DELETE')).toEqual([]);
    dial.mockRestore();
  });

  it('create sent and its answer lost: the container the engine made is removed', async () => {
    const proxy = await losingCreateAnswers();
    try {
      const backend = createDockerBackend({ socketPath: proxy.socketPath });
      const env = backend.environment({ image: BASIC, network: 'none' });
      const phases = phasesOf(env);
      const error = await env.start().catch((e: unknown) => e);
      expect(BackendUnavailableError.isInstance(error), String(error)).toBe(true);
      // The engine did make it: its answer was the one dropped.
      expect(proxy.lostAnswer()).toMatch(/^HTTP\/1\.1 201/);
      await env.teardown();
      expect(phases.at(-1)).toEqual(['stopped', undefined]);
      const left = await docker.listContainers({ all: true, filters: { label: [`berth.environment=${env.id}`] } });
      expect(left.map((c) => c.Names[0])).toEqual([]);
    } finally {
      await proxy.close();
    }
  });
});
