// Modal rate-limiting sandbox creation, through the simulator (issue 31, item 3): a burst of
// starts against a Modal that refuses the first creates with RESOURCE_EXHAUSTED all succeed, the
// creation limiter having been told and having held the others back; a quota fails at once.
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { BackendUnavailableError, type Environment } from '@berth/core';
import { createModalBackend } from '@berth/backend-modal';
import { Code, ModalSimulator } from '@berth/test-support/modal-sim';

const sim = await ModalSimulator.start();
const SPEC = { image: 'berth-test/busybox:latest' };
const backends: Array<{ close(): Promise<void> }> = [];
const envs: Environment[] = [];

function backend() {
  const b = createModalBackend(sim.clientOptions());
  backends.push(b);
  return b;
}
/** The simulator's answers to sandbox creates since `from`, by gRPC code. */
function creates(from: number): { refused: number; made: number } {
  const calls = sim.calls.slice(from).filter((c) => /\/SandboxCreate(V2)?$/.test(c.path));
  return { refused: calls.filter((c) => c.code === Code.RESOURCE_EXHAUSTED).length, made: calls.filter((c) => c.code === Code.OK).length };
}

afterEach(async () => {
  await Promise.all(envs.splice(0).map((e) => e.teardown().catch(() => undefined)));
});
afterAll(async () => {
  await Promise.all(backends.map((b) => b.close()));
  await sim.close();
});

describe('Modal throttling sandbox creation', () => {
  it('20 starts at once against a Modal rate-limiting the first 6 creates: all start, and the limiter said it was throttled', async () => {
    const b = backend();
    const from = sim.calls.length;
    sim.faults.rateLimit({ count: 6, retryAfterSecs: 0.5 });
    const details: string[] = [];
    const batch = Array.from({ length: 20 }, () => {
      const env = b.environment(SPEC);
      envs.push(env);
      env.events.on('phase', (_phase, detail) => detail && details.push(detail));
      return env;
    });
    await Promise.all(batch.map((env) => env.start()));
    expect(batch.every((env) => env.phase === 'running')).toBe(true);
    expect(creates(from)).toEqual({ refused: 6, made: 20 });
    expect(
      details.filter((d) => /^throttled by the engine: waiting \d+ ms$/.test(d)),
      details.join('\n'),
    ).toHaveLength(6);
    const outputs = await Promise.all(batch.map((env) => env.exec('echo ok')));
    expect(outputs.every((r) => r.stdout === 'ok\n')).toBe(true);
  });

  it('a rate limit without a retry hint is waited out too (the backoff), the start succeeding', async () => {
    const from = sim.calls.length;
    sim.faults.rateLimit({ count: 2 });
    const env = backend().environment(SPEC);
    envs.push(env);
    const details: string[] = [];
    env.events.on('phase', (_phase, detail) => detail && details.push(detail));
    await env.start();
    expect(creates(from)).toEqual({ refused: 2, made: 1 });
    // The first pause is the backoff's 0.5 s; the second depends on the jittered wait before it.
    expect(details[0]).toBe('throttled by the engine: waiting 500 ms');
    expect(details.filter((d) => /^throttled by the engine: waiting \d+ ms$/.test(d))).toHaveLength(2);
  });

  it('a quota (RESOURCE_EXHAUSTED without a retry hint or a rate) fails the start at once, naming the limit', async () => {
    const from = sim.calls.length;
    const limit = 'Workspace has reached its limit of 100 running sandboxes';
    sim.faults.failNext('SandboxCreateV2', Code.RESOURCE_EXHAUSTED, limit);
    const env = backend().environment(SPEC);
    envs.push(env);
    const error = await env.start().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(BackendUnavailableError.isInstance(error), String(error)).toBe(true);
    expect((error as Error).message).toContain(limit);
    expect((error as Error).message).toContain('options.creation.maxConcurrent');
    expect(creates(from)).toEqual({ refused: 1, made: 0 });
  });
});
