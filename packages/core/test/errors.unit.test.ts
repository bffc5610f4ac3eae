import { describe, expect, it } from 'vitest';
import {
  BackendAuthError,
  BackendUnavailableError,
  BerthError,
  CancelledError,
  CapabilityError,
  ConfigError,
  ImagePullError,
  SandboxLostError,
  StartupTimeoutError,
  TaskFailure,
  TransferError,
  registerSecret,
  serializeError,
} from '../src/index.js';

const base = { message: 'm', backend: 'docker', environmentId: 'env-1' };

describe('error taxonomy', () => {
  const cases: Array<[BerthError, string, boolean]> = [
    [new SandboxLostError({ ...base, operation: 'exec' }), 'transient_infra', true],
    [new ImagePullError({ ...base, image: 'x', reason: 'unauthorized' }), 'permanent_infra', false],
    [new ImagePullError({ ...base, image: 'x', reason: 'not_found' }), 'permanent_infra', false],
    [new ImagePullError({ ...base, image: 'x', reason: 'rate_limited' }), 'transient_infra', true],
    [new ImagePullError({ ...base, image: 'x', reason: 'transient' }), 'transient_infra', true],
    [new StartupTimeoutError({ ...base, timeoutMs: 5 }), 'transient_infra', true],
    [new BackendUnavailableError(base), 'transient_infra', true],
    [new BackendAuthError(base), 'permanent_infra', false],
    [new ConfigError(base), 'permanent_infra', false],
    [new CapabilityError({ ...base, capability: 'gpus' }), 'permanent_infra', false],
    [new CancelledError(base), 'cancelled', false],
    [new TaskFailure({ ...base, kind: 'RewardFileMissing' }), 'task_failure', false],
  ];
  it.each(cases)('%s has its category and retryability', (error, category, retryable) => {
    expect(error.category).toBe(category);
    expect(error.retryable).toBe(retryable);
    expect(BerthError.isInstance(error)).toBe(true);
    expect(error).toBeInstanceOf(Error);
    expect(error.backend).toBe('docker');
    expect(error.environmentId).toBe('env-1');
    expect(error.name).toBe(error.constructor.name);
  });

  it('isInstance tells the classes apart', () => {
    const lost = new SandboxLostError(base);
    expect(SandboxLostError.isInstance(lost)).toBe(true);
    expect(ImagePullError.isInstance(lost)).toBe(false);
    expect(TransferError.isInstance(lost)).toBe(false);
    expect(SandboxLostError.isInstance(new Error('x'))).toBe(false);
    expect(SandboxLostError.isInstance(null)).toBe(false);
    expect(SandboxLostError.isInstance('SandboxLostError')).toBe(false);
  });

  it('isInstance works across two copies of the package', async () => {
    // A query string makes the module loader evaluate the file a second time: a duplicate copy.
    const duplicate = '../src/errors.js?duplicate-copy';
    const copy = (await import(duplicate)) as typeof import('../src/errors.js');
    expect(copy.SandboxLostError).not.toBe(SandboxLostError);
    const foreign = new copy.SandboxLostError(base);
    expect(foreign instanceof SandboxLostError).toBe(false);
    expect(SandboxLostError.isInstance(foreign)).toBe(true);
    expect(BerthError.isInstance(foreign)).toBe(true);
    expect(ImagePullError.isInstance(foreign)).toBe(false);
  });

  it('TransferError takes its category from its cause', () => {
    const lost = new SandboxLostError({ ...base, operation: 'upload' });
    const upload = new TransferError({ ...base, operation: 'upload', reason: 'sandbox_lost', cause: lost });
    expect(upload.category).toBe('transient_infra');
    expect(upload.retryable).toBe(true);
    const nested = new TransferError({ ...base, reason: 'interrupted', cause: new Error('wrapper', { cause: new BackendAuthError(base) }) });
    expect(nested.category).toBe('permanent_infra');
    const plain = new TransferError({ ...base, reason: 'remote_io', cause: new Error('disk full') });
    expect(plain.category).toBe('permanent_infra');
    expect(plain.retryable).toBe(false);
    const explicit = new TransferError({ ...base, reason: 'not_found', category: 'task_failure' });
    expect(explicit.category).toBe('task_failure');
  });

  it('toJSON serialises the whole cause chain with secrets redacted', () => {
    registerSecret('hunter2-very-secret');
    const root = Object.assign(new Error('connect ECONNRESET with token=abc123def'), { code: 'ECONNRESET' });
    const lost = new SandboxLostError({ ...base, message: 'lost, password hunter2-very-secret leaked', cause: root, lastState: 'exited (137)' });
    const transfer = new TransferError({ ...base, operation: 'upload', reason: 'sandbox_lost', cause: lost, remotePath: '/tests' });
    const json = transfer.toJSON();
    expect(json.type).toBe('TransferError');
    expect(json.category).toBe('transient_infra');
    expect(json.details).toMatchObject({ reason: 'sandbox_lost', remotePath: '/tests' });
    expect(json.cause?.type).toBe('SandboxLostError');
    expect(json.cause?.details).toEqual({ lastState: 'exited (137)' });
    expect(json.cause?.cause).toMatchObject({ name: 'Error', code: 'ECONNRESET' });
    const text = JSON.stringify(json);
    expect(text).not.toContain('hunter2-very-secret');
    expect(text).not.toContain('abc123def');
    expect(text).toContain('[REDACTED]');
    // JSON.stringify uses toJSON directly
    expect(JSON.parse(JSON.stringify(transfer))).toEqual(json);
  });

  it('serializeError handles non-errors and deep chains', () => {
    expect(serializeError('plain')).toEqual({ name: 'NonError', message: 'plain' });
    expect(serializeError({ a: 1 })).toEqual({ name: 'NonError', message: '{"a":1}' });
    let deep: Error = new Error('bottom');
    for (let i = 0; i < 40; i++) deep = new Error(`level ${i}`, { cause: deep });
    let json = serializeError(deep);
    const messages = [json.message];
    while (json.cause) {
      json = json.cause;
      messages.push(json.message);
    }
    // The top of the chain kept in order (what matters is near the top), then a marker saying it was cut.
    expect(messages.length).toBeGreaterThanOrEqual(10);
    expect(messages.length).toBeLessThan(20);
    expect(messages.slice(0, -1)).toEqual(Array.from({ length: messages.length - 1 }, (_, i) => `level ${39 - i}`));
    expect(messages.at(-1)).toBe('(cause chain truncated)');
  });

  it('keeps the native cause', () => {
    const cause = new Error('root');
    expect(new ConfigError({ message: 'x', cause }).cause).toBe(cause);
  });
});
