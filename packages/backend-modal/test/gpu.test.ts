// GPUs on Modal, against the simulator: the GPU config SandboxCreate carries, read back from what
// the simulator received, encoded as Modal's own client encodes gpu="A100-80GB:2" and gpu="any".
// (This machine has no GPUs: the simulated sandbox runs without them.)
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '@berth/core';
import { createModalBackend } from '@berth/backend-modal';
import { gpuConfig } from '../src/gpu.js';
import { Code, ModalSimulator } from '@berth/test-support/modal-sim';

const sim = await ModalSimulator.start();
const backend = createModalBackend(sim.clientOptions());
afterAll(async () => {
  await backend.close();
  await sim.close();
});

/** The GPU config of the one sandbox this test has running. */
async function receivedGpu(): Promise<unknown> {
  const [id] = await sim.sandboxes();
  return (sim.definition(id!)?.resources as { gpu_config?: unknown } | undefined)?.gpu_config;
}

describe('GPUs on Modal (simulated)', () => {
  it('encodes like the official client: type upper-cased beside the count; no type is "ANY"; no GPUs, no config', () => {
    expect(gpuConfig({ gpus: 2, gpuTypes: ['a100-80gb'] })).toEqual({ gpu_config: { gpu_type: 'A100-80GB', count: 2 } });
    expect(gpuConfig({ gpus: 1 })).toEqual({ gpu_config: { gpu_type: 'ANY', count: 1 } });
    expect(gpuConfig({ gpus: 0 })).toEqual({});
    expect(gpuConfig({})).toEqual({});
  });

  it('a sandbox asking for 2 GPUs of any of two types gets the first type, count 2, in Resources.gpu_config', async () => {
    await using env = await backend.start({ image: 'berth-test/busybox:latest', resources: { gpus: 2, gpuTypes: ['A100-40GB', 'H100'] } });
    expect(await receivedGpu()).toEqual({ gpu_type: 'A100-40GB', count: 2 });
    expect((await env.exec('echo up')).stdout).toBe('up\n');
  });

  it('a count without a type asks Modal for any GPU', async () => {
    await using env = await backend.start({ image: 'berth-test/busybox:latest', resources: { gpus: 1 } });
    expect(await receivedGpu()).toEqual({ gpu_type: 'ANY', count: 1 });
    expect(env.phase).toBe('running');
  });

  it('a type Modal does not have is refused by Modal (INVALID_ARGUMENT): a ConfigError, not retried', async () => {
    const before = sim.calls.length;
    const env = backend.environment({ image: 'berth-test/busybox:latest', resources: { gpus: 1, gpuTypes: ['Voodoo2'] } });
    const error = await env.start().then(
      () => undefined,
      (e: unknown) => e,
    );
    await env.teardown();
    expect(ConfigError.isInstance(error), String(error)).toBe(true);
    expect((error as Error).message).toMatch(/Not a valid GPU type.*VOODOO2/);
    expect(await sim.sandboxes()).toEqual([]);
    // Asked once: Modal's refusal was taken as its answer, not retried (by the backend or the kit).
    const creates = sim.calls.slice(before).filter((c) => /\/SandboxCreate(V2)?$/.test(c.path));
    expect(creates.map((c) => c.code)).toEqual([Code.INVALID_ARGUMENT]);
  });
});
