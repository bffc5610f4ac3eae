// Misspelt options are refused with what was meant, never ignored (exec, transfers, pools, and
// each backend's factory: those tests are in backend-options.test.ts beside the factories).
import { describe, expect, it } from 'vitest';
import { ConfigError } from '@berth/core';
import { checkOptionNames, likelyOption } from '../src/kit/option-names.js';
import { poolOptions } from '../src/kit/pool-options.js';

function refusal(run: () => unknown): ConfigError {
  let error: unknown;
  try {
    run();
  } catch (e) {
    error = e;
  }
  expect(ConfigError.isInstance(error), String(error)).toBe(true);
  return error as ConfigError;
}

describe('option names', () => {
  it('suggest the name meant: a known alias, a prefix, a near spelling; nothing for a stranger', () => {
    const exec = ['cwd', 'user', 'env', 'timeoutMs', 'stdin', 'maxOutputBytes', 'onStdout', 'onStderr', 'signal', 'tty'];
    expect(likelyOption('timeout', exec)).toBe('timeoutMs');
    expect(likelyOption('timeoutSec', exec)).toBe('timeoutMs');
    expect(likelyOption('maxOutput', exec)).toBe('maxOutputBytes');
    expect(likelyOption('sigal', exec)).toBe('signal');
    expect(likelyOption('Cwd', exec)).toBe('cwd');
    expect(likelyOption('banana', exec)).toBeUndefined();
    expect(likelyOption('socket', ['socketPath', 'host'])).toBe('socketPath');
  });

  it('refuse an unknown name with its path, what was meant and every name there is', () => {
    const error = refusal(() => checkOptionNames({ timeout: 500 }, ['timeoutMs', 'cwd'], { what: 'exec', path: 'opts', operation: 'exec' }));
    expect(error.path).toBe('opts.timeout');
    expect(error.message).toBe('exec has no option "timeout": did you mean timeoutMs? (its options: cwd, timeoutMs)');
    expect(() => checkOptionNames({ cwd: '/' }, ['timeoutMs', 'cwd'], { what: 'exec', path: 'opts' })).not.toThrow();
    expect(() => checkOptionNames(undefined, ['cwd'], { what: 'exec', path: 'opts' })).not.toThrow();
  });

  it("refuse a pool's misspelt option", () => {
    const error = refusal(() => poolOptions({ size: 2, maxIdle: 5 } as never));
    expect(error.path).toBe('opts.maxIdle');
    expect(error.message).toMatch(/did you mean maxIdleMs\?/);
  });
});

describe("an environment's calls", () => {
  it('refuse a misspelt option before anything runs: exec { timeout } would have run with no timeout at all', async () => {
    const { SandboxEnvironment } = await import('../src/kit/environment.js');
    const { parseEnvironmentSpec } = await import('../src/spec.js');
    const { LocalTransport } = await import('./support/local-transport.js');
    const transport = new LocalTransport({});
    const env = new SandboxEnvironment({
      backend: 'local',
      id: 'local-options',
      spec: parseEnvironmentSpec({ image: 'local:latest' }),
      transport,
      transfers: 'exec',
    });
    await env.start();
    try {
      const marker = `/tmp/berth-option-${process.pid}`;
      const refused = await env.exec(`touch ${marker}`, { timeout: 500 } as never).catch((e: unknown) => e);
      expect(ConfigError.isInstance(refused)).toBe(true);
      expect((refused as ConfigError).path).toBe('opts.timeout');
      expect((refused as Error).message).toMatch(/^exec has no option "timeout": did you mean timeoutMs\?/);
      // Nothing ran.
      expect((await env.exec(['sh', '-c', `test -e ${marker} && echo ran || echo not`])).stdout).toBe('not\n');
      const transfer = await env.downloadDir('/tmp', '/tmp/x', { outsideLink: 'keep' } as never).catch((e: unknown) => e);
      expect((transfer as ConfigError).message).toMatch(/^downloadDir has no option "outsideLink": did you mean outsideLinks\?/);
      expect(((await env.uploadFile('/etc/hostname', '/tmp/y', { abortSignal: undefined } as never).catch((e: unknown) => e)) as ConfigError).path).toBe(
        'opts.abortSignal',
      );
    } finally {
      await env.teardown();
    }
  });
});
