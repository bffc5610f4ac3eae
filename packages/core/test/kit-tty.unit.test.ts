// opts.tty in the kit, over the local transport (real child processes): a backend that does not
// claim the tty capability refuses it before anything runs; one that does gets the size in its
// ProcessRequest. The terminal itself is the backends' (the conformance suite's exec.tty cases).
import { describe, expect, it } from 'vitest';
import type { Capabilities } from '../src/contract.js';
import { CapabilityError, ConfigError } from '../src/errors.js';
import { SandboxEnvironment } from '../src/kit/environment.js';
import { parseEnvironmentSpec } from '../src/spec.js';
import { LocalTransport } from './support/local-transport.js';

async function started(capabilities?: Pick<Capabilities, 'tty'>): Promise<{ env: SandboxEnvironment; transport: LocalTransport }> {
  const transport = new LocalTransport();
  const env = new SandboxEnvironment({
    backend: 'local',
    id: `local-${Math.random().toString(16).slice(2, 8)}`,
    spec: parseEnvironmentSpec({ image: 'local:latest' }),
    transport,
    transfers: 'exec',
    ...(capabilities ? { capabilities } : {}),
  });
  await env.start();
  return { env, transport };
}

const failure = (p: Promise<unknown>): Promise<unknown> =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

describe('kit: opts.tty', () => {
  it.each([
    ['no capabilities given', undefined],
    ['tty: false', { tty: false }],
  ])('a backend without the tty capability (%s) refuses a tty exec with a CapabilityError, and runs nothing', async (_, capabilities) => {
    const { env, transport } = await started(capabilities);
    for (const tty of [true, { rows: 40, cols: 120 }] as const) {
      const error = await failure(env.exec('echo should-not-run', { tty }));
      expect(CapabilityError.isInstance(error), String(error)).toBe(true);
      expect(error).toMatchObject({
        capability: 'exec.tty',
        backend: 'local',
        operation: 'exec',
        environmentId: env.id,
        category: 'permanent_infra',
        retryable: false,
      });
      expect((error as Error).message).toContain('cannot give a command a terminal');
    }
    expect(transport.spawned).toEqual([]);
    // No terminal asked for: runs as ever.
    expect((await env.exec('echo plain', { tty: false })).stdout).toBe('plain\n');
    expect(transport.spawned.every((r) => r.tty === undefined)).toBe(true);
  });

  it('a malformed size is a ConfigError on opts.tty, with the capability or without', async () => {
    for (const capabilities of [undefined, { tty: true }]) {
      const { env, transport } = await started(capabilities);
      for (const tty of [{ rows: 0, cols: 80 }, { rows: 24, cols: 2.5 }, { rows: 65_536, cols: 80 }, { rows: 24 }, 'yes', null]) {
        const error = await failure(env.exec('true', { tty: tty as never }));
        expect(ConfigError.isInstance(error) && error.path, `${JSON.stringify(tty)}: ${String(error)}`).toBe('opts.tty');
      }
      expect(transport.spawned).toEqual([]);
    }
  });

  it('a backend claiming tty gets the size in its request (24x80 for true); without a terminal to size, the command runs at once', async () => {
    const { env, transport } = await started({ tty: true });
    const started_ = Date.now();
    const r = await env.exec(['sh', '-c', 'echo "$0:$1"', 'a b', 'c'], { tty: true });
    expect(r).toMatchObject({ exitCode: 0, stdout: 'a b:c\n' });
    expect(transport.spawned.at(-1)?.tty).toEqual({ rows: 24, cols: 80 });
    const sized = await env.exec('exit 3', { tty: { rows: 33, cols: 101 }, cwd: '/tmp' });
    expect(sized.exitCode).toBe(3);
    expect(transport.spawned.at(-1)?.tty).toEqual({ rows: 33, cols: 101 });
    // The size gate waits only for a terminal on stdin (here there is none): no 2 s stall.
    expect(Date.now() - started_).toBeLessThan(1_500);
    await env.exec('true');
    expect(transport.spawned.at(-1)?.tty).toBeUndefined();
  });
});
