// Retries with one idempotency key, preflight of a named secret, and sweep by berth's tags, against the simulator.
import { afterAll, describe, expect, it } from 'vitest';
import { SESSION_ID } from '@berth/core';
import { createModalBackend } from '@berth/backend-modal';
import { Code, ModalSimulator } from '@berth/test-support/modal-sim';

const sim = await ModalSimulator.start();
const backend = createModalBackend(sim.clientOptions());
afterAll(async () => {
  await backend.close();
  await sim.close();
});

describe('Modal backend operations (simulated)', () => {
  it('a unary call failing with UNAVAILABLE is retried with the same x-idempotency-key, and makes one sandbox', async () => {
    const before = sim.calls.length;
    sim.faults.failNext('SandboxCreateV2', Code.UNAVAILABLE, 'worker pool restarting', 2);
    await using env = await backend.start({ image: 'berth-test/busybox:latest' });
    const creates = sim.calls.slice(before).filter((c) => c.path.endsWith('/SandboxCreateV2'));
    expect(creates.map((c) => c.code)).toEqual([Code.UNAVAILABLE, Code.UNAVAILABLE, 0]);
    expect(new Set(creates.map((c) => c.idempotencyKey)).size).toBe(1);
    expect(creates[0]?.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    expect((await sim.sandboxes()).length).toBe(1);
    await expect(env.exec('echo one')).resolves.toMatchObject({ stdout: 'one\n' });
  });

  it('preflight: a named Modal secret that does not exist, or lacks the keys for its registry, fails the image check', async () => {
    const missing = await backend.preflight({ image: { ref: '127.0.0.1:5000/berth/private-busybox:latest', auth: { secretName: 'no-such-secret' } } });
    expect(missing.checks.find((c) => c.name === 'image')).toMatchObject({ status: 'fail' });
    sim.addSecret('half', { REGISTRY_USERNAME: 'berth' });
    const half = await backend.preflight({ image: { ref: '127.0.0.1:5000/berth/private-busybox:latest', auth: { secretName: 'half' } } });
    expect(half.checks.find((c) => c.name === 'image')).toMatchObject({ status: 'fail', message: expect.stringMatching(/REGISTRY_PASSWORD/) });
  });

  it("sweep terminates berth's sandboxes by their tags (a live owner's only once older than asked); a dry run only lists them", async () => {
    const env = await backend.start({ image: 'berth-test/busybox:latest' });
    try {
      expect((await backend.sweep({ session: SESSION_ID })).removed).toEqual([]);
      const dry = await backend.sweep({ session: SESSION_ID, olderThanMs: 0, dryRun: true });
      expect(dry).toMatchObject({ backend: 'modal', removed: [], failed: [], dryRun: true });
      expect(dry.wouldRemove).toEqual(await sim.sandboxes());
      expect(dry.wouldRemove).toHaveLength(1);
      expect((await env.exec('echo still-here')).stdout).toBe('still-here\n');
      const swept = await backend.sweep({ session: SESSION_ID, olderThanMs: 0 });
      expect(swept.removed).toHaveLength(1);
      expect(await sim.sandboxes()).toEqual([]);
    } finally {
      await env.teardown().catch(() => undefined);
    }
  });
});
