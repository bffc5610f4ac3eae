import { describe, expect, it } from 'vitest';
import { inspect } from 'node:util';
import { ConfigError, parseEnvironmentSpec, redactSecrets } from '../src/index.js';

describe('parseEnvironmentSpec', () => {
  it('fills defaults and normalises the image', () => {
    const spec = parseEnvironmentSpec({ image: 'ubuntu:22.04' });
    expect(spec).toEqual({
      image: { ref: 'ubuntu:22.04' },
      resources: {},
      network: 'none',
      networkSwitch: false,
      env: {},
      timeouts: {},
      labels: {},
      mounts: [],
      services: {},
      dependsOn: {},
    });
  });

  it('accepts every auth form', () => {
    for (const auth of [{ username: 'u', password: 'p' }, { identityToken: 't' }, { aws: { region: 'us-east-1' } }, { secretName: 'ghcr-creds' }]) {
      const parsed = (parseEnvironmentSpec({ image: { ref: 'ghcr.io/a/b:1', auth } }).image as { auth?: unknown }).auth as Record<string, unknown>;
      for (const [key, value] of Object.entries(auth)) expect(parsed[key]).toEqual(value);
    }
  });

  it('keeps registry secrets out of anything that prints, while the backend can still read them', () => {
    const spec = parseEnvironmentSpec({
      image: { ref: 'r.example/a:1', auth: { username: 'bot', password: 'pr1nt-me-not' } },
    });
    const aws = parseEnvironmentSpec({
      image: { ref: 'r.example/a:1', auth: { aws: { accessKeyId: 'AKIAEXAMPLE', secretAccessKey: 'aws-s3cret-key', sessionToken: 'aws-s3ssion-token' } } },
    });
    const printed = [
      JSON.stringify(spec),
      inspect(spec, { depth: 10 }),
      JSON.stringify(aws),
      inspect(aws, { depth: 10 }),
      JSON.stringify({ ...(spec.image as { auth?: object }).auth }),
    ].join('\n');
    for (const secret of ['pr1nt-me-not', 'aws-s3cret-key', 'aws-s3ssion-token']) expect(printed).not.toContain(secret);
    expect(printed).toContain('bot');
    expect(((spec.image as { auth?: unknown }).auth as { password: string }).password).toBe('pr1nt-me-not');
    expect(((aws.image as { auth?: unknown }).auth as { aws: { secretAccessKey: string } }).aws.secretAccessKey).toBe('aws-s3cret-key');
    // Registered for redaction too: an error that quotes it by accident is masked.
    expect(redactSecrets('failed with pr1nt-me-not')).toBe('failed with [REDACTED]');
  });

  it('says what was wrong with the image, in words a user can act on', () => {
    const message = (input: unknown) => {
      try {
        parseEnvironmentSpec(input);
      } catch (error) {
        return (error as Error).message;
      }
      return 'accepted';
    };
    expect(message({ image: 123 })).toContain("must be an image reference string such as 'python:3.12-slim'");
    expect(message({})).toContain('spec.image is required');
    expect(message({ image: { ref: 'x', auth: { user: 'u', password: 'p4ss-typo' } } })).toContain('got keys user, password');
    expect(message({ image: { ref: 'x', auth: { user: 'u', password: 'p4ss-typo' } } })).toContain('{ username, password }');
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
    [{ image: { ref: 'x', auth: { username: 'u' } } }, 'spec.image.auth'],
    [{ image: { ref: 'x', auth: { user: 'u', password: 'p' } } }, 'spec.image.auth'],
    [{ image: 123 }, 'spec.image'],
    [{}, 'spec.image'],
    [{ image: 'x', env: { HUGE: 'x'.repeat(200 * 1024) } }, 'spec.env.HUGE'],
    [{ image: 'x', resources: { gpus: 1, gpuTypes: [] } }, 'spec.resources.gpuTypes'],
    [{ image: 'x', resources: { gpus: 1, gpuTypes: [''] } }, 'spec.resources.gpuTypes.0'],
    [{ image: 'x', resources: { gpus: 1, gpuTypes: ['A100-40GB:2'] } }, 'spec.resources.gpuTypes.0'],
    [{ image: 'x', resources: { gpuTypes: ['H100'] } }, 'spec.resources.gpuTypes'],
    [{ image: 'x', resources: { gpus: 0, gpuTypes: ['H100'] } }, 'spec.resources.gpuTypes'],
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

  it('takes GPU types beside a count, any of them, repeats dropped in order; types without a count say what to set', () => {
    expect(parseEnvironmentSpec({ image: 'x', resources: { gpus: 2, gpuTypes: ['H100', 'A100-80GB', 'H100'] } }).resources).toEqual({
      gpus: 2,
      gpuTypes: ['H100', 'A100-80GB'],
    });
    expect(() => parseEnvironmentSpec({ image: 'x', resources: { gpuTypes: ['H100'] } })).toThrow(/resources\.gpus asks for none: set resources\.gpus/);
    expect(() => parseEnvironmentSpec({ image: 'x', resources: { gpus: 1, gpuTypes: ['T4:2'] } })).toThrow(/the count goes in resources\.gpus/);
  });

  it('never echoes a password into the error', () => {
    const error = (() => {
      try {
        parseEnvironmentSpec({ image: { ref: 'x', auth: { username: 'u', password: 'sup3r-s3cret-pw', extra: 1 } } });
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    expect(ConfigError.isInstance(error), `a spec with an unknown auth field threw ${String(error)}`).toBe(true);
    const config = error as ConfigError;
    // It is about the auth (what to fix), and says so without the password.
    expect(config.path).toMatch(/^spec\.image\.auth/);
    expect(JSON.stringify(config.toJSON())).not.toContain('sup3r-s3cret-pw');
    expect(config.message).not.toContain('sup3r-s3cret-pw');
  });
});
