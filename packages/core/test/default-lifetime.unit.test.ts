// The common option defaultLifetimeMs (Kubernetes and Modal: the service ends a sandbox whose spec
// sets no lifetime at this deadline) as the kit checks it, and the error when that default, not
// the spec's lifetime, is what ended a sandbox: it must say so and name the option.
import { describe, expect, it } from 'vitest';
import { ConfigError, SandboxLostError, TaskFailure } from '../src/errors.js';
import { DEFAULT_LIFETIME_MS, defaultLifetimeMs } from '../src/kit/common-options.js';
import { SandboxEnvironment } from '../src/kit/environment.js';
import type { SandboxProcess, SandboxStatus, SandboxTransport } from '../src/kit/transport.js';
import { parseEnvironmentSpec } from '../src/spec.js';

const AT = { backend: 'toy', factory: 'createToyBackend' };

function refusal(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    if (ConfigError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('defaultLifetimeMs (the option)', () => {
  it('defaults to 24 h; a whole number of ms is taken as given; false is none where the backend allows it', () => {
    expect(DEFAULT_LIFETIME_MS).toBe(86_400_000);
    expect(defaultLifetimeMs({}, { ...AT, offAllowed: true })).toBe(86_400_000);
    expect(defaultLifetimeMs({ defaultLifetimeMs: 3000 }, { ...AT, offAllowed: true })).toBe(3000);
    expect(defaultLifetimeMs({ defaultLifetimeMs: 7 * 86_400_000 }, { ...AT, offAllowed: true })).toBe(7 * 86_400_000);
    expect(defaultLifetimeMs({ defaultLifetimeMs: false }, { ...AT, offAllowed: true })).toBeUndefined();
  });

  it('refuses what is not a lifetime, as a ConfigError on options.defaultLifetimeMs naming the option', () => {
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '24h', null, true, {}]) {
      const error = refusal(() => defaultLifetimeMs({ defaultLifetimeMs: bad as never }, { ...AT, offAllowed: true }));
      expect(error.path).toBe('options.defaultLifetimeMs');
      expect(error.message).toMatch(/^createToyBackend's defaultLifetimeMs is a whole number of milliseconds above 0, or false for none; got /);
      expect(error.operation).toBe('config');
    }
  });

  it('refuses false and values over the maximum where the backend cannot take them, saying why', () => {
    const at = { ...AT, offAllowed: false, maxMs: DEFAULT_LIFETIME_MS, why: 'the service caps it at 24 h' };
    expect(defaultLifetimeMs({ defaultLifetimeMs: DEFAULT_LIFETIME_MS }, at)).toBe(DEFAULT_LIFETIME_MS);
    const off = refusal(() => defaultLifetimeMs({ defaultLifetimeMs: false }, at));
    expect(off.message).toBe("createToyBackend's defaultLifetimeMs cannot be false: the service caps it at 24 h");
    const over = refusal(() => defaultLifetimeMs({ defaultLifetimeMs: DEFAULT_LIFETIME_MS + 1 }, at));
    expect(over.message).toBe("createToyBackend's defaultLifetimeMs is at most 86400000 (24 h): the service caps it at 24 h; got 86400001");
    expect(over.path).toBe('options.defaultLifetimeMs');
    const zero = refusal(() => defaultLifetimeMs({ defaultLifetimeMs: 0 }, at));
    expect(zero.message).toMatch(/above 0 up to 86400000 \(24 h\); got 0$/);
  });
});

/** A sandbox that ended before the first command: every spawn finds it gone; inspect says how it ended. */
class EndedTransport implements SandboxTransport {
  constructor(readonly status: SandboxStatus) {}
  async create(): Promise<void> {}
  async inspect(): Promise<SandboxStatus> {
    return this.status;
  }
  async remove(): Promise<void> {}
  async spawn(): Promise<SandboxProcess> {
    throw new Error('gone');
  }
  mapError(error: unknown) {
    return (error as Error).message === 'gone' ? new SandboxLostError({ operation: 'exec', backend: 'toy', message: 'the sandbox is gone' }) : undefined;
  }
}

async function execError(status: SandboxStatus, timeouts: Record<string, number> = {}): Promise<unknown> {
  const env = new SandboxEnvironment({
    backend: 'toy',
    id: 'toy-1',
    spec: parseEnvironmentSpec({ image: 'toy:1', timeouts }),
    transport: new EndedTransport(status),
    transfers: 'exec',
  });
  await env.start();
  const error = await env.exec('true').then(
    () => new Error('expected a failure'),
    (e: unknown) => e,
  );
  // The next operation says the same: the sandbox's end is remembered, with whose lifetime it was.
  const again = await env.exec('true').catch((e: unknown) => e);
  expect(String(again)).toBe(String(error));
  return error;
}

describe('a sandbox ended by a lifetime', () => {
  it("the backend's default (the spec sets none): LifetimeExceeded saying it was the default, and naming the option to raise", async () => {
    const error = await execError({ running: false, reason: 'DeadlineExceeded', lifetimeExpired: true, defaultLifetimeMs: 3000 });
    expect(TaskFailure.isInstance(error) && error.type, String(error)).toBe('LifetimeExceeded');
    expect((error as Error).message).toBe(
      "sandbox toy-1 reached the toy backend's default lifetime of 3000 ms (3 s) during exec: the spec sets no timeouts.lifetimeMs, " +
        'so the backend option defaultLifetimeMs applied; for longer tasks raise defaultLifetimeMs, or give the spec its own timeouts.lifetimeMs',
    );
  });

  it("the spec's own: LifetimeExceeded naming timeouts.lifetimeMs, not the option", async () => {
    const error = await execError({ running: false, reason: 'DeadlineExceeded', lifetimeExpired: true }, { lifetimeMs: 5000 });
    expect(TaskFailure.isInstance(error) && error.type).toBe('LifetimeExceeded');
    expect((error as Error).message).toBe('sandbox toy-1 reached its lifetime of 5000 ms (timeouts.lifetimeMs) during exec');
  });

  it('no lifetime at all (neither the spec nor a default) says no number it does not have', async () => {
    const error = await execError({ running: false, reason: 'exited (0)', lifetimeExpired: true });
    expect((error as Error).message).toBe('sandbox toy-1 reached its lifetime during exec');
  });

  it('a sandbox that ended otherwise is still a loss, whatever default the backend has', async () => {
    const error = await execError({ running: false, reason: 'Evicted' });
    expect(SandboxLostError.isInstance(error), String(error)).toBe(true);
  });
});
