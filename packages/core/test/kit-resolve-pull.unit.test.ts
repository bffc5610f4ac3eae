// resolvePull: how every backend reads an image it pulls, before any I/O (mirrors, whose
// credentials go where, the pull policy's default, auth the backend cannot resolve refused).
import { describe, expect, it } from 'vitest';
import { CapabilityError, ConfigError } from '../src/errors.js';
import { resolvePull } from '../src/kit/index.js';

const TOY = { backend: 'toy', factory: 'createToyBackend' };
const ctx = { ...TOY, operation: 'config' as const };
const basic = { username: 'robot', password: 'p@ss' };
const mirrorAuth = { username: 'mirror', password: 'm1rr0r' };

/** What `fn` throws; failing the test if it returns. */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw, got a return');
}

describe('resolvePull', () => {
  it('applies the mirror rules: a moved pull carries the rule’s credentials, never the spec’s', () => {
    const mirrors = [{ from: 'docker.io/', to: '127.0.0.1:5000/hub/', auth: mirrorAuth }];
    const pull = resolvePull({ ref: 'python:3.12', auth: basic }, { mirrors }, ctx);
    expect(pull.image.canonical).toBe('127.0.0.1:5000/hub/library/python:3.12');
    expect(pull.auth).toEqual(mirrorAuth);
    expect(pull.rule).toBe(mirrors[0]);
    // No rule matches: the spec's reference and credentials, as written.
    const own = resolvePull({ ref: 'ghcr.io/org/task:1', auth: basic }, { mirrors }, ctx);
    expect(own).toMatchObject({ image: { canonical: 'ghcr.io/org/task:1' }, auth: basic });
    expect(own.rule).toBeUndefined();
    // A rule without auth moving the pull to another host sends nothing: the mirror's come from Docker's config.
    const bare = resolvePull({ ref: 'python:3.12', auth: basic }, { mirrors: [{ from: 'docker.io/', to: 'mirror.example/hub/' }] }, ctx);
    expect(bare.image.registry).toBe('mirror.example');
    expect(bare.auth).toBeUndefined();
  });

  it("defaults the pull policy to 'if-missing' and keeps the one the options set", () => {
    expect(resolvePull('busybox:stable', {}, ctx).policy).toBe('if-missing');
    expect(resolvePull('busybox:stable', { pullPolicy: 'never' }, ctx).policy).toBe('never');
    expect(resolvePull('busybox:stable', { pullPolicy: 'always' }, ctx).policy).toBe('always');
  });

  it('a { secretName } the options do not define is a ConfigError naming the factory to configure; a defined one passes', () => {
    const refused = thrown(() => resolvePull({ ref: 'ghcr.io/org/task:1', auth: { secretName: 'ghcr-pull' } }, {}, { ...ctx, environmentId: 'toy-1' }));
    expect(ConfigError.isInstance(refused)).toBe(true);
    expect(refused).toMatchObject({ backend: 'toy', operation: 'config', environmentId: 'toy-1', path: 'spec.image.auth.secretName' });
    expect((refused as Error).message).toContain('createToyBackend({ registrySecrets: { "ghcr-pull"');
    const named = resolvePull({ ref: 'ghcr.io/org/task:1', auth: { secretName: 'ghcr-pull' } }, { registrySecrets: { 'ghcr-pull': basic } }, ctx);
    expect(named.auth).toEqual({ secretName: 'ghcr-pull' });
    expect(named.secretName).toBeUndefined();
  });

  it('aws auth without an ecrLogin is a CapabilityError naming the factory', () => {
    const refused = thrown(() => resolvePull({ ref: '123456789012.dkr.ecr.us-east-1.amazonaws.com/t:1', auth: { aws: {} } }, {}, ctx));
    expect(CapabilityError.isInstance(refused)).toBe(true);
    expect((refused as Error).message).toContain('createToyBackend({ ecrLogin })');
  });

  it('auth the engine resolves itself is not checked: a secretName is returned apart and kept from mirrors, aws passes through', () => {
    const mirrors = [{ from: 'ghcr.io/', to: 'ghcr.io/mirror/' }];
    const pull = resolvePull({ ref: 'ghcr.io/org/task:1', auth: { secretName: 'ns-secret' } }, { mirrors }, { ...ctx, engineAuth: ['secretName'] });
    expect(pull).toMatchObject({ image: { canonical: 'ghcr.io/mirror/org/task:1' }, secretName: 'ns-secret' });
    expect(pull.auth).toBeUndefined();
    const ecr = { aws: { accessKeyId: 'AKIA1', secretAccessKey: 's' } };
    const aws = resolvePull({ ref: '123456789012.dkr.ecr.us-east-1.amazonaws.com/t:1', auth: ecr }, {}, { ...ctx, engineAuth: ['secretName', 'aws'] });
    expect(aws.auth).toEqual(ecr);
  });

  it("a snapshot's reference is never pulled, whatever the pull policy", () => {
    const pull = resolvePull(
      'berth-snapshot.invalid/docker/berth-1:abc',
      { pullPolicy: 'always' },
      { backend: 'toy', factory: 'createToy', operation: 'start' },
    );
    expect(pull.policy).toBe('never');
    expect(resolvePull('registry.example/a:1', { pullPolicy: 'always' }, { backend: 'toy', factory: 'createToy', operation: 'start' }).policy).toBe('always');
  });
});
