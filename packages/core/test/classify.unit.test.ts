import { describe, expect, it } from 'vitest';
import { CancelledError, ImagePullError, SandboxLostError, TaskFailure, TransferError, classifyFailure } from '../src/index.js';

describe('classifyFailure', () => {
  it('finds a berth error under a wrapper that would hide it', () => {
    const lost = new SandboxLostError({ message: 'gone', backend: 'modal' });
    // What harbor did: a bare wrapper with a vaguer message.
    const wrapped = new Error('Failed to add tests directory to environment.', { cause: lost });
    expect(classifyFailure(wrapped)).toEqual({
      category: 'transient_infra',
      type: 'SandboxLostError',
      message: 'Failed to add tests directory to environment.',
      unclassified: false,
      retryable: true,
    });
  });

  it('classifies the outermost berth error, which already accounts for its cause', () => {
    const transfer = new TransferError({ message: 'upload failed', reason: 'sandbox_lost', cause: new SandboxLostError({ message: 'gone' }) });
    expect(classifyFailure(transfer)).toMatchObject({ category: 'transient_infra', type: 'TransferError' });
  });

  it('carries retry-after hints', () => {
    const limited = new ImagePullError({ message: 'slow down', image: 'x', reason: 'rate_limited', retryAfterMs: 30_000 });
    expect(classifyFailure(limited)).toMatchObject({ category: 'transient_infra', retryable: true, retryAfterMs: 30_000 });
  });

  it('treats AbortError as cancelled and network codes as transient', () => {
    const abort = new DOMException('aborted', 'AbortError');
    expect(classifyFailure(abort)).toMatchObject({ category: 'cancelled', unclassified: false });
    const reset = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    expect(classifyFailure(new Error('request failed', { cause: reset }))).toMatchObject({ category: 'transient_infra', type: 'ECONNRESET' });
    expect(classifyFailure(new CancelledError({ message: 'stop' })).category).toBe('cancelled');
  });

  it('never counts an unknown error as a task failure', () => {
    const result = classifyFailure(new TypeError('undefined is not a function'));
    expect(result).toMatchObject({ category: 'unclassified', type: 'TypeError', unclassified: true, retryable: false });
    expect(classifyFailure('a string').unclassified).toBe(true);
    expect(classifyFailure(undefined).unclassified).toBe(true);
  });

  it('task failures are task failures with their own type', () => {
    expect(classifyFailure(new TaskFailure({ message: 'no reward', kind: 'RewardFileMissing' }))).toMatchObject({
      category: 'task_failure',
      type: 'RewardFileMissing',
      unclassified: false,
    });
  });
});
