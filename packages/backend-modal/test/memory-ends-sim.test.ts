// A sandbox that Modal ends with GenericStatus 10 (KERNEL_OOM_KILL) or 9
// (MEMORY_THRASHING_EVICTION), through the whole backend: the simulator cannot end a sandbox with
// those (its eviction says 8, its failed load INIT_FAILURE), so a proxy between berth and the
// simulator rewrites the status in SandboxWait(V2) and SandboxGetTaskId(V2) answers to the raw number,
// exception text and all, as Modal's server would send it. In use, the exec in flight and the next
// are SandboxLostError naming OOMKilled / Evicted; before the sandbox ran, the start is.
import { execFileSync } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { execInFlight } from '@berth/conformance';
import { SandboxLostError, classifyFailure } from '@berth/core';
import { createModalBackend } from '@berth/backend-modal';
import { decodeMessage } from '../src/wire/protobuf.js';
import { ModalSimulator } from '@berth/test-support/modal-sim';
import { rewriteProxy } from './support/rewrite-proxy.js';

const sim = await ModalSimulator.start({ longPollMs: 2000 });

/** What the proxy turns the simulator's ends into: GenericStatus number and Modal's text. */
let instead: { from: string; status: number; exception: string } | undefined;

/** GenericResult{status, exception} in the wire's own bytes: status as a raw varint (one-byte lengths: short texts only). */
function resultBytes(status: number, exception: string): Buffer {
  const text = Buffer.from(exception);
  if (text.length > 100 || status > 127) throw new Error('resultBytes writes one-byte varints only');
  return Buffer.concat([Buffer.from([0x08, status, 0x12, text.length]), text]);
}
const field = (number: number, bytes: Buffer) => Buffer.concat([Buffer.from([(number << 3) | 2, bytes.length]), bytes]);

// berth asks on V2 (SandboxWaitV2, SandboxGetTaskIdV2), which answer with the V1 messages; V1 is rewritten too for the 'v1' switch.
const proxy = await rewriteProxy(sim.url, ['SandboxWaitV2', 'SandboxGetTaskIdV2', 'SandboxWait', 'SandboxGetTaskId'], (method, message) => {
  const wait = method === 'SandboxWait' || method === 'SandboxWaitV2';
  const decoded = wait ? decodeMessage('SandboxWaitResponse', message).result : decodeMessage('SandboxGetTaskIdResponse', message).task_result;
  if (!instead || decoded?.status !== instead.from) return message;
  // Both answers hold the GenericResult in their field 1 (SandboxWaitResponse.result) or 2 (task_result).
  return field(wait ? 1 : 2, resultBytes(instead.status, instead.exception));
});
const backend = createModalBackend({ ...sim.clientOptions(), serverUrl: proxy.url, guardian: false });

afterAll(async () => {
  await backend.close();
  await proxy.close();
  await sim.close();
});

/** The sandbox id behind an environment, from the simulator's containers (tagged with berth's labels). */
function sandboxOf(envId: string): string {
  return execFileSync('docker', ['ps', '--filter', `label=modal.tag.berth.environment=${envId}`, '--format', '{{.Label "berth.modal-sim"}}'])
    .toString()
    .trim();
}

describe('GenericStatus 9 and 10 through the backend (simulator behind a rewriting proxy)', () => {
  it.each([
    [
      10,
      'Out of memory: the kernel killed process 1',
      /^OOMKilled \(KERNEL_OOM_KILL: the kernel killed the sandbox for running out of memory\): Out of memory/,
    ],
    [9, 'Sandbox evicted: memory thrashing', /^Evicted \(MEMORY_THRASHING_EVICTION: Modal evicted the sandbox for memory thrashing\): Sandbox evicted/],
  ])('status %i while a command runs: SandboxLostError (transient) naming it, for that exec and the next', async (status, exception, state) => {
    instead = { from: 'GENERIC_STATUS_MEMORY_MANAGER_EVICTION', status, exception };
    await using env = await backend.start({ image: 'berth-test/busybox:latest' });
    // Evicted once the command surely runs (its marker arrived), not after a guessed pause.
    const { started, result } = execInFlight(env, 'sleep 30');
    await started;
    await sim.faults.evict(sandboxOf(env.id));
    const error = await result.catch((e: unknown) => e);
    expect(SandboxLostError.isInstance(error), String(error)).toBe(true);
    expect((error as SandboxLostError).lastState).toMatch(state);
    expect((error as Error).message).toContain((error as SandboxLostError).lastState);
    expect(classifyFailure(error)).toMatchObject({ category: 'transient_infra' });
    const next = await env.exec('true').catch((e: unknown) => e);
    expect((next as SandboxLostError).lastState).toMatch(state);
  });

  it('status 10 before the sandbox ran: the start is SandboxLostError naming OOMKilled', async () => {
    instead = { from: 'GENERIC_STATUS_INIT_FAILURE', status: 10, exception: 'Out of memory while starting' };
    sim.faults.fetchSpecFailure(1);
    const error = await backend.start({ image: 'berth-test/busybox:latest' }).catch((e: unknown) => e);
    expect(SandboxLostError.isInstance(error), String(error)).toBe(true);
    expect(error).toMatchObject({
      lastState: 'OOMKilled (KERNEL_OOM_KILL: the kernel killed the sandbox for running out of memory): Out of memory while starting',
      message: expect.stringContaining('the sandbox ended before it ran: OOMKilled (KERNEL_OOM_KILL'),
    });
  });
});
