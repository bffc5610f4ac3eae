// GPUs on Docker: claimed through device requests only where the engine reports an NVIDIA
// runtime. This engine has none, so a GPU spec is refused by name before anything is pulled or
// made; what berth would send to an engine that has one is read from a fake engine on loopback.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { CapabilityError, classifyFailure } from '@berth/core';
import { createDockerBackend } from '@berth/backend-docker';
import { gpuDeviceRequests, nvidiaRuntime } from '../src/gpu.js';

const docker = new Docker();
const servers: Array<{ close(): void }> = [];
afterAll(() => {
  for (const s of servers) s.close();
});

describe('Docker GPUs', () => {
  it('finds the NVIDIA runtime by name or path, and asks for GPUs as `docker run --gpus N` does', () => {
    expect(nvidiaRuntime({ runc: { path: 'runc' }, nvidia: { path: 'nvidia-container-runtime' } })).toBe('nvidia');
    expect(nvidiaRuntime({ runc: { path: 'runc' }, gpu: { path: '/usr/bin/nvidia-container-runtime' } })).toBe('gpu');
    expect(nvidiaRuntime({ runc: { path: 'runc' }, 'io.containerd.runc.v2': { path: 'runc' } })).toBeUndefined();
    expect(nvidiaRuntime(undefined)).toBeUndefined();
    expect(gpuDeviceRequests(2)).toEqual([{ Driver: 'nvidia', Count: 2, Capabilities: [['gpu']] }]);
    expect(gpuDeviceRequests(0)).toEqual([]);
  });

  it('this engine has no NVIDIA runtime: a GPU spec is a CapabilityError naming it and how to get one, before any pull; preflight says so too', async () => {
    const info = (await docker.info()) as { Runtimes?: Record<string, unknown> };
    expect(nvidiaRuntime(info.Runtimes as never), 'this test expects an engine without GPUs').toBeUndefined();
    const backend = createDockerBackend();
    // An image that exists nowhere: a refusal after a pull would be an ImagePullError instead.
    const env = backend.environment({ image: 'berth-test/never-pulled:gpu', resources: { gpus: 1 } });
    const error = await env.start().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(CapabilityError.isInstance(error), String(error)).toBe(true);
    expect(error).toMatchObject({ capability: 'gpus', backend: 'docker', environmentId: env.id });
    expect((error as Error).message).toMatch(/no NVIDIA runtime \(its runtimes: .*runc.*\); install the NVIDIA Container Toolkit/);
    expect(classifyFailure(error)).toMatchObject({ category: 'permanent_infra', type: 'CapabilityError' });
    expect(await docker.listContainers({ all: true, filters: { name: [env.id] } })).toEqual([]);

    const report = await backend.preflight({ image: 'berth-test/busybox:latest', resources: { gpus: 2 } });
    expect(report.ok).toBe(false);
    expect(report.checks.find((c) => c.name === 'gpus')).toMatchObject({ status: 'fail', message: expect.stringMatching(/no NVIDIA runtime/) });
  });

  it('where the engine reports an NVIDIA runtime, the container is created with the device request (a fake engine on loopback)', async () => {
    const creates: Array<{ HostConfig?: { DeviceRequests?: unknown } }> = [];
    const infos: string[] = [];
    const reply = (res: ServerResponse, status: number, body?: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(body === undefined ? '' : JSON.stringify(body));
    };
    const server = createServer(async (req: IncomingMessage, res) => {
      let body = '';
      for await (const chunk of req) body += String(chunk);
      const path = (req.url ?? '').replace(/^\/v[\d.]+/, '').split('?')[0]!;
      if (req.method === 'GET' && path === '/info') {
        infos.push(path);
        return reply(res, 200, { Runtimes: { runc: { path: 'runc' }, nvidia: { path: 'nvidia-container-runtime' } } });
      }
      if (req.method === 'GET' && path.startsWith('/images/')) return reply(res, 200, { Id: 'sha256:fake' });
      if (req.method === 'POST' && path === '/containers/create') {
        creates.push(JSON.parse(body));
        return reply(res, 400, { message: 'fake engine: nothing is created here' });
      }
      return reply(res, 404, { message: `fake engine: no such container` });
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const backend = createDockerBackend({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, protocol: 'http' });
    for (const gpus of [1, 2]) {
      await backend
        .environment({ image: 'berth-test/busybox:latest', resources: { gpus } })
        .start()
        .catch(() => undefined);
    }
    expect(creates.map((c) => c.HostConfig?.DeviceRequests)).toEqual([
      [{ Driver: 'nvidia', Count: 1, Capabilities: [['gpu']] }],
      [{ Driver: 'nvidia', Count: 2, Capabilities: [['gpu']] }],
    ]);
    // Asked once per backend instance.
    expect(infos).toHaveLength(1);
  });
});
