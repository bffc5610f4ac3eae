// What the Modal backend says about an image on a Bearer-token registry: its real preflight, and its
// real start after Modal could not load the container (FetchSpec failed), with the registry answered
// by msw. Modal's own API is not: its few calls are stubbed on ControlPlane / SandboxRpcs / ImageBuilds, and any
// other gRPC call fails the test instead of leaving the machine (msw does not see HTTP/2 gRPC).
import { HttpResponse } from 'msw';
import { setupServer } from 'msw/node';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { ImagePullError, SandboxLostError, type EnvironmentSpecInput, type PreflightCheck } from '@berth/core';
import { createModalBackend } from '@berth/backend-modal';
import { ImageBuilds } from '../src/image.js';
import { ControlPlane, GrpcTransport, SandboxRpcs } from '../src/wire/index.js';
import { REALM, REGISTRY, SERVICE, bearerRegistry, type BearerRegistryOptions } from '@berth/test-support/bearer-registry';

const PASSWORD = 'pw-Tr34-never-printed';
const PRIVATE = `${REGISTRY}/team/private-app:1.0`;
const manifest = (repo: string) => `https://${REGISTRY}/v2/${repo}/manifests/1.0`;

const server = setupServer();
beforeAll(() => server.listen({ onUnhandledRequest: 'error' }));
beforeEach(() => {
  vi.spyOn(GrpcTransport.prototype, 'stream').mockImplementation(() => {
    throw new Error('no Modal API in this test: stub the ControlPlane call');
  });
  vi.spyOn(ControlPlane.prototype, 'appGetOrCreate').mockResolvedValue('ap-test');
});
afterEach(() => {
  server.resetHandlers();
  vi.restoreAllMocks();
});
afterAll(() => server.close());

const backend = () =>
  createModalBackend({ serverUrl: 'https://modal.example.test', tokenId: 'ak-test', tokenSecret: 'as-test', modalConfigEnv: {}, dockerConfigEnv: {} });

function registry(options: BearerRegistryOptions = {}) {
  const reg = bearerRegistry({ repos: { 'library/public-app': 'public', 'team/private-app': 'private' }, users: { alice: PASSWORD }, ...options });
  server.use(...reg.handlers);
  return reg;
}

/** The image check of Modal's whole preflight. */
async function imageCheck(image: EnvironmentSpecInput['image'], options: BearerRegistryOptions = {}): Promise<PreflightCheck> {
  registry(options);
  const report = await backend().preflight({ image });
  expect(report.checks.map((c) => c.name)).toEqual(['api', 'spec', 'image']);
  const check = report.checks[2]!;
  expect(report.ok).toBe(check.status !== 'fail');
  expect(JSON.stringify(report)).not.toContain(PASSWORD);
  return check;
}

describe('Modal preflight: the image check on a Bearer registry', () => {
  it('a public image: ok, pullable anonymously', async () => {
    expect(await imageCheck(`${REGISTRY}/library/public-app:1.0`)).toEqual({
      name: 'image',
      status: 'ok',
      message: `${REGISTRY}/library/public-app:1.0 is pullable anonymously`,
    });
  });

  it('unauthorized: a private image and no credentials fails, saying none were found', async () => {
    expect(await imageCheck(PRIVATE)).toMatchObject({
      status: 'fail',
      message: `pulling ${PRIVATE} failed: ${PRIVATE}: no basic auth credentials: unauthorized (HEAD ${manifest('team/private-app')} answered 401) (no credentials were found for this registry: pass spec.image.auth)`,
      error: { name: 'ImagePullError', details: { reason: 'unauthorized', image: PRIVATE } },
    });
  });

  it('unauthorized: a password the token service refuses', async () => {
    expect(await imageCheck({ ref: PRIVATE, auth: { username: 'alice', password: 'not-the-password' } })).toMatchObject({
      status: 'fail',
      message: `pulling ${PRIVATE} failed: ${PRIVATE}: unauthorized: authentication required (GET ${REALM}?service=${SERVICE}&scope=repository%3Ateam%2Fprivate-app%3Apull answered 401) (the registry rejected the credentials given)`,
      error: { details: { reason: 'unauthorized' } },
    });
  });

  it('not_found: a repository that does not exist', async () => {
    const image = `${REGISTRY}/team/no-such-app:1.0`;
    expect(await imageCheck({ ref: image, auth: { username: 'alice', password: PASSWORD } })).toMatchObject({
      status: 'fail',
      message: `pulling ${image} failed: ${image}: manifest unknown: not found (HEAD ${manifest('team/no-such-app')} answered 404) (check the repository name and tag)`,
      error: { details: { reason: 'not_found' } },
    });
  });

  it('rate_limited: a 429 with Retry-After fails the check with the wait in its message', async () => {
    const check = await imageCheck(PRIVATE, { manifestAnswer: () => new HttpResponse(null, { status: 429, headers: { 'retry-after': '120' } }) });
    expect(check).toMatchObject({
      status: 'fail',
      message: `pulling ${PRIVATE} failed: ${PRIVATE}: toomanyrequests: retry after 120 s (HEAD ${manifest('team/private-app')} answered 429)`,
      error: { details: { reason: 'rate_limited' }, retryAfterMs: 120_000 },
    });
  });

  it('a malformed challenge: a warning that quotes it (as on Kubernetes: one wording), not a misleading "unauthorized"', async () => {
    const challenge = `Bearer service="${SERVICE}",scope="repository:team/private-app:pull"`;
    expect(await imageCheck(PRIVATE, { challenge })).toEqual({
      name: 'image',
      status: 'warn',
      message: `the registry of ${PRIVATE} could not be asked from here (${REGISTRY} answered 401 with a malformed Bearer challenge (no realm): WWW-Authenticate: ${challenge})`,
    });
  });
});

describe('Modal start: a container that could not be loaded, asked of a Bearer registry', () => {
  beforeEach(() => {
    vi.spyOn(ImageBuilds.prototype, 'ensure').mockResolvedValue('im-test');
    vi.spyOn(SandboxRpcs.prototype, 'create').mockResolvedValue({ sandboxId: 'sb-test' });
    vi.spyOn(SandboxRpcs.prototype, 'taskId').mockResolvedValue({
      result: { status: 'GENERIC_STATUS_INIT_FAILURE', exception: 'FetchSpec failed: loading container: file does not exist' },
    });
    vi.spyOn(SandboxRpcs.prototype, 'terminate').mockResolvedValue(undefined);
  });
  const startFailure = (image: EnvironmentSpecInput['image']) =>
    backend()
      .start({ image })
      .then(
        () => {
          throw new Error('expected the start to fail');
        },
        (e: unknown) => e,
      );

  it('a 429 with Retry-After: ImagePullError rate_limited, carrying the wait for the retry', async () => {
    registry({ manifestAnswer: () => new HttpResponse(null, { status: 429, headers: { 'retry-after': '45' } }) });
    const error = await startFailure(PRIVATE);
    expect(ImagePullError.isInstance(error), String(error)).toBe(true);
    expect(error).toMatchObject({
      reason: 'rate_limited',
      retryAfterMs: 45_000,
      retryable: true,
      message: expect.stringContaining('toomanyrequests: retry after 45 s'),
    });
  });

  it('unauthorized: ImagePullError unauthorized, with how to pass credentials on Modal', async () => {
    registry();
    const error = await startFailure(PRIVATE);
    expect(error).toMatchObject({
      reason: 'unauthorized',
      retryable: false,
      message: expect.stringContaining('pass spec.image.auth ({ username, password } or { secretName } of a Modal secret)'),
    });
  });

  it('a malformed challenge: the registry cannot be asked, so Modal is blamed (transient), and the challenge is not read as "unauthorized"', async () => {
    const reg = registry({ challenge: 'Bearer service="x"' });
    const error = await startFailure(PRIVATE);
    expect(reg.seen.map((r) => r.method)).toEqual(['HEAD']);
    expect(SandboxLostError.isInstance(error), String(error)).toBe(true);
    expect((error as Error).message).toContain('whether the image is pullable could not be asked');
  });
});
