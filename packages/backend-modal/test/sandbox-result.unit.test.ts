// How a sandbox's end (GenericResult) reads in berth's terms, from the bytes Modal sends: the
// statuses Modal's SDK 1.6.4 added (9 MEMORY_THRASHING_EVICTION, 10 KERNEL_OOM_KILL) as raw
// numbers on the wire, read by inspect() and by a start that never got a task. No engine needed.
import { describe, expect, it } from 'vitest';
import { ConfigError, SandboxLostError, parseImageRef } from '@berth/core';
import { ModalSandbox } from '../src/sandbox.js';
import { endReason, statusName } from '../src/sandbox-result.js';
import type { ModalShared } from '../src/shared.js';
import { decodeMessage } from '../src/wire/protobuf.js';
import type { GenericResult } from '../src/wire/index.js';

/** A GenericResult{status, exception} as Modal encodes it: field 1 varint, field 2 string. */
function resultBytes(status: number, exception = ''): Buffer {
  const text = Buffer.from(exception);
  return Buffer.concat([Buffer.from([0x08, status]), text.length ? Buffer.concat([Buffer.from([0x12, text.length]), text]) : Buffer.alloc(0)]);
}
/** SandboxWaitResponse{result} / SandboxGetTaskIdResponse{task_result}: both field 1 and 2 hold the result. */
const wrap = (field: number, inner: Buffer) => Buffer.concat([Buffer.from([(field << 3) | 2, inner.length]), inner]);
const waitResult = (status: number, exception?: string) => decodeMessage('SandboxWaitResponse', wrap(1, resultBytes(status, exception))).result!;
const taskIdResult = (status: number, exception?: string) => decodeMessage('SandboxGetTaskIdResponse', wrap(2, resultBytes(status, exception))).task_result!;

const spec = { image: { ref: 'busybox' }, env: {}, resources: {}, timeouts: {}, labels: {} } as unknown as ConstructorParameters<typeof ModalSandbox>[2];
const plan = Promise.resolve({ image: { ref: parseImageRef('busybox'), authType: 'REGISTRY_AUTH_TYPE_PUBLIC' as const, hadCredentials: false } });

/** A sandbox over a fake control plane: created at once; its task runs, or it ended as `started` says. */
function sandbox(answers: { wait?: GenericResult; started?: GenericResult }) {
  const sandboxes = {
    create: async () => ({ sandboxId: 'sb-1' }),
    taskId: async () => (answers.started ? { result: answers.started } : { taskId: 'ta-1' }),
    wait: async () => answers.wait,
  };
  const shared = {
    sandboxes,
    sandboxApi: 2,
    options: {},
    app: async () => 'ap-1',
    images: { ensure: async () => 'im-1' },
    mayProbe: () => false,
  } as unknown as ModalShared;
  return new ModalSandbox(shared, 'env-1', spec, plan);
}
const ctx = () => ({ labels: {}, signal: new AbortController().signal, progress: () => undefined, notify: () => undefined, lost: () => undefined });

describe('GenericStatus 9 and 10 from the wire', () => {
  it('decode to their names (fields.json has them)', () => {
    expect(waitResult(9).status).toBe('GENERIC_STATUS_MEMORY_THRASHING_EVICTION');
    expect(waitResult(10).status).toBe('GENERIC_STATUS_KERNEL_OOM_KILL');
    // A status berth does not know yet stays a number, and still reads.
    expect(waitResult(11).status).toBe(11);
    expect(statusName(11)).toBe('status 11');
  });

  it("10, a kernel OOM kill, is OOMKilled as on Docker and Kubernetes, with Modal's name and words", () => {
    expect(endReason(waitResult(10))).toBe('OOMKilled (KERNEL_OOM_KILL: the kernel killed the sandbox for running out of memory)');
    expect(endReason(waitResult(10, 'Out of memory'))).toBe(
      'OOMKilled (KERNEL_OOM_KILL: the kernel killed the sandbox for running out of memory): Out of memory',
    );
  });

  it("9 is an eviction like 8; other statuses keep Modal's name", () => {
    expect(endReason(waitResult(9))).toBe('Evicted (MEMORY_THRASHING_EVICTION: Modal evicted the sandbox for memory thrashing)');
    expect(endReason(waitResult(8))).toMatch(/^Evicted \(MEMORY_MANAGER_EVICTION: /);
    expect(endReason(waitResult(3, 'Sandbox was terminated'))).toBe('TERMINATED: Sandbox was terminated');
    expect(endReason(waitResult(11))).toBe('status 11');
  });
});

describe('inspect()', () => {
  it('a sandbox ended by a kernel OOM kill is not running, its reason OOMKilled, not its lifetime', async () => {
    const live = sandbox({ wait: waitResult(10, 'Out of memory') });
    await live.create(ctx());
    const status = await live.inspect();
    expect(status).toMatchObject({ running: false, lifetimeExpired: false });
    expect((status as { reason: string }).reason).toMatch(/^OOMKilled \(KERNEL_OOM_KILL: .*\): Out of memory$/);
  });

  it('a memory thrashing eviction reads Evicted', async () => {
    const live = sandbox({ wait: waitResult(9) });
    await live.create(ctx());
    expect(await live.inspect()).toMatchObject({
      running: false,
      reason: expect.stringMatching(/^Evicted \(MEMORY_THRASHING_EVICTION/),
      lifetimeExpired: false,
    });
  });
});

describe('a start whose sandbox ends before it has a task', () => {
  it.each([
    [10, /^OOMKilled \(KERNEL_OOM_KILL/],
    [9, /^Evicted \(MEMORY_THRASHING_EVICTION/],
    [8, /^Evicted \(MEMORY_MANAGER_EVICTION/],
  ])('status %i is SandboxLostError naming it', async (status, state) => {
    const error = await sandbox({ started: taskIdResult(status, 'gone') })
      .create(ctx())
      .catch((e: unknown) => e);
    expect(SandboxLostError.isInstance(error), String(error)).toBe(true);
    expect((error as SandboxLostError).lastState).toMatch(state);
    expect((error as Error).message).toMatch(/the sandbox ended before it ran: (OOMKilled|Evicted) \(.*\): gone/);
  });

  it('FAILURE right after starting is still the image (no /bin/sh), not a loss', async () => {
    const error = await sandbox({ started: taskIdResult(2) })
      .create(ctx())
      .catch((e: unknown) => e);
    expect(ConfigError.isInstance(error), String(error)).toBe(true);
  });
});
