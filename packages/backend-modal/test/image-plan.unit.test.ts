// How each kind of registry credential becomes Modal's registry config (no I/O: the plan only).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CapabilityError, ConfigError } from '@berth/core';
import { planImage } from '../src/image.js';

const empty = mkdtempSync(join(tmpdir(), 'berth-modal-plan-'));
afterAll(() => rmSync(empty, { recursive: true, force: true }));
// Docker config lookups see an empty home, so nothing from this machine leaks into the plans.
const options = { dockerConfigEnv: { HOME: empty, PATH: '' } };

describe('planImage', () => {
  it('static credentials become an ephemeral STATIC_CREDS secret, and berth can probe with them', async () => {
    const plan = await planImage('ghcr.io/org/task:1', { username: 'robot', password: 'p@ss' }, options);
    expect(plan).toMatchObject({
      authType: 'REGISTRY_AUTH_TYPE_STATIC_CREDS',
      inline: { REGISTRY_USERNAME: 'robot', REGISTRY_PASSWORD: 'p@ss' },
      hadCredentials: true,
    });
    expect(plan.probeWith).toMatchObject({ username: 'robot' });
  });

  it('a named secret says how to log in by the registry: AWS for ECR, GCP for Artifact Registry and gcr.io, static otherwise', async () => {
    const ecr = await planImage('123456789012.dkr.ecr.us-east-1.amazonaws.com/team/task:1', { secretName: 'aws-pull' }, options);
    expect(ecr).toMatchObject({
      authType: 'REGISTRY_AUTH_TYPE_AWS',
      named: { name: 'aws-pull', requiredKeys: ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_REGION'] },
    });
    const gar = await planImage('us-docker.pkg.dev/proj/repo/task:1', { secretName: 'gcp-pull' }, options);
    expect(gar).toMatchObject({ authType: 'REGISTRY_AUTH_TYPE_GCP', named: { requiredKeys: ['SERVICE_ACCOUNT_JSON'] } });
    const gcr = await planImage('gcr.io/proj/task:1', { secretName: 'gcp-pull' }, options);
    expect(gcr.authType).toBe('REGISTRY_AUTH_TYPE_GCP');
    const ghcr = await planImage('ghcr.io/org/task:1', { secretName: 'ghcr-pull' }, options);
    expect(ghcr).toMatchObject({ authType: 'REGISTRY_AUTH_TYPE_STATIC_CREDS', named: { requiredKeys: ['REGISTRY_USERNAME', 'REGISTRY_PASSWORD'] } });
    expect(ghcr.probeWith).toBeUndefined();
  });

  it('aws keys are handed to Modal for ECR (region from the reference when not given); keys missing is a ConfigError', async () => {
    const plan = await planImage('123456789012.dkr.ecr.eu-west-1.amazonaws.com/t:1', { aws: { accessKeyId: 'AKIA1', secretAccessKey: 's3cr3t' } }, options);
    expect(plan).toMatchObject({
      authType: 'REGISTRY_AUTH_TYPE_AWS',
      inline: { AWS_ACCESS_KEY_ID: 'AKIA1', AWS_SECRET_ACCESS_KEY: 's3cr3t', AWS_REGION: 'eu-west-1' },
    });
    await expect(planImage('123456789012.dkr.ecr.eu-west-1.amazonaws.com/t:1', { aws: { profile: 'dev' } }, options)).rejects.toSatisfy(
      (e) => ConfigError.isInstance(e) && /accessKeyId/.test((e as Error).message),
    );
  });

  it('an identity token is a CapabilityError; no credentials at all is a PUBLIC pull; Docker config credentials are used when present', async () => {
    await expect(planImage('ghcr.io/org/t:1', { identityToken: 'tok' }, options)).rejects.toSatisfy((e) => CapabilityError.isInstance(e));
    expect(await planImage('ghcr.io/org/t:1', undefined, options)).toMatchObject({ authType: 'REGISTRY_AUTH_TYPE_PUBLIC', hadCredentials: false });
    const home = mkdtempSync(join(tmpdir(), 'berth-modal-dockercfg-'));
    try {
      writeFileSync(join(home, 'config.json'), JSON.stringify({ auths: { 'ghcr.io': { auth: Buffer.from('me:pw').toString('base64') } } }));
      const plan = await planImage('ghcr.io/org/t:1', undefined, { dockerConfigEnv: { DOCKER_CONFIG: home, HOME: empty, PATH: '' } });
      expect(plan).toMatchObject({ authType: 'REGISTRY_AUTH_TYPE_STATIC_CREDS', inline: { REGISTRY_USERNAME: 'me', REGISTRY_PASSWORD: 'pw' } });
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('mirror rules are applied first', async () => {
    const plan = await planImage('docker.io/library/python:3.12', undefined, {
      ...options,
      mirrors: [{ from: 'docker.io/library/', to: '127.0.0.1:5000/mirror/' }],
    });
    expect(plan.ref.canonical).toBe('127.0.0.1:5000/mirror/python:3.12');
  });
});
