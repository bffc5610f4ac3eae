import { describe, expect, it } from 'vitest';
import { ConfigError, parseEnvironmentSpec } from '../src/index.js';

describe('parseEnvironmentSpec', () => {
  it('fills defaults and normalises the image', () => {
    const spec = parseEnvironmentSpec({ image: 'ubuntu:22.04' });
    expect(spec).toEqual({
      image: { ref: 'ubuntu:22.04' },
      resources: {},
      network: 'none',
      env: {},
      timeouts: {},
      labels: {},
      mounts: [],
    });
  });

  it('accepts every auth form', () => {
    for (const auth of [
      { username: 'u', password: 'p' },
      { identityToken: 't' },
      { aws: { region: 'us-east-1' } },
      { secretName: 'ghcr-creds' },
    ]) {
      expect(parseEnvironmentSpec({ image: { ref: 'ghcr.io/a/b:1', auth } }).image.auth).toEqual(auth);
    }
  });

  it.each([
    [{ image: '' }, 'spec.image'],
    [{ image: 'x', resources: { cpus: -1 } }, 'spec.resources.cpus'],
    [{ image: 'x', resources: { memoryMb: 1.5 } }, 'spec.resources.memoryMb'],
    [{ image: 'x', network: 'host' }, 'spec.network'],
    [{ image: 'x', workdir: 'relative' }, 'spec.workdir'],
    [{ image: 'x', env: { 'BAD-NAME': 'v' } }, 'spec.env.BAD-NAME'],
    [{ image: 'x', timeouts: { startupMs: 0 } }, 'spec.timeouts.startupMs'],
    [{ image: 'x', mounts: [{ type: 'bind', source: 'rel', target: '/x' }] }, 'spec.mounts.0.source'],
    [{ image: 'x', unknownField: 1 }, 'spec'],
    [{ image: { ref: 'x', auth: { username: 'u' } } }, 'spec.image'],
  ])('rejects %j at %s with a ConfigError that says where', (input, path) => {
    let error: unknown;
    try {
      parseEnvironmentSpec(input);
    } catch (e) {
      error = e;
    }
    expect(ConfigError.isInstance(error)).toBe(true);
    const config = error as ConfigError;
    expect(config.path).toBe(path);
    expect(config.message).toContain('invalid environment spec');
    expect(config.category).toBe('permanent_infra');
  });

  it('never echoes a password into the error', () => {
    try {
      parseEnvironmentSpec({ image: { ref: 'x', auth: { username: 'u', password: 'sup3r-s3cret-pw', extra: 1 } } });
      expect.unreachable();
    } catch (error) {
      expect(JSON.stringify((error as ConfigError).toJSON())).not.toContain('sup3r-s3cret-pw');
      expect((error as Error).message).not.toContain('sup3r-s3cret-pw');
    }
  });
});
