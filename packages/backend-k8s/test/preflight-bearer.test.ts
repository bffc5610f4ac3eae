// What the Kubernetes backend's preflight says about an image on a Bearer-token registry. The whole
// preflight runs (createK8sBackend(...).preflight), with the Kubernetes API and the registry both
// answered by msw: no cluster, and no packet leaves the machine.
import { KubeConfig } from '@kubernetes/client-node';
import { HttpResponse, http } from 'msw';
import { setupServer } from 'msw/node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { EnvironmentSpecInput, PreflightCheck } from '@berth/core';
import { createK8sBackend } from '@berth/backend-k8s';
import { REALM, REGISTRY, SERVICE, bearerRegistry, type BearerRegistryOptions } from '@berth/test-support/bearer-registry';

const API = 'https://kube.example.test';
const NAMESPACE = 'berth';
const PASSWORD = 'pw-Hn52-never-printed';
const IDENTITY = 'refresh-Vb90-never-printed';

/** The Kubernetes API, as much of it as preflight asks: pods listable, every access review allowed, nodes not listable. */
const kubeApi = [
  http.get(`${API}/api/v1/namespaces/${NAMESPACE}/pods`, () => HttpResponse.json({ kind: 'PodList', apiVersion: 'v1', metadata: {}, items: [] })),
  http.post(`${API}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews`, async ({ request }) =>
    HttpResponse.json({ ...((await request.json()) as object), status: { allowed: true } }, { status: 201 }),
  ),
  http.get(`${API}/api/v1/nodes`, () =>
    HttpResponse.json({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Forbidden', code: 403 }, { status: 403 }),
  ),
  // A pull secret holding an identity token for the registry, as `docker login` writes one.
  http.get(`${API}/api/v1/namespaces/${NAMESPACE}/secrets/registry-login`, () => {
    const config = { auths: { [REGISTRY]: { identitytoken: IDENTITY } } };
    return HttpResponse.json({
      kind: 'Secret',
      apiVersion: 'v1',
      metadata: { name: 'registry-login' },
      data: { '.dockerconfigjson': Buffer.from(JSON.stringify(config)).toString('base64') },
    });
  }),
];

const server = setupServer(...kubeApi);
beforeAll(() => server.listen({ onUnhandledRequest: 'error' }));
afterEach(() => server.resetHandlers());
afterAll(() => server.close());

function backend() {
  const kubeconfig = new KubeConfig();
  kubeconfig.loadFromOptions({
    clusters: [{ name: 'test', server: API, skipTLSVerify: false }],
    users: [{ name: 'test', token: 'kube-token-not-used' }],
    contexts: [{ name: 'test', cluster: 'test', user: 'test', namespace: NAMESPACE }],
    currentContext: 'test',
  });
  // dockerConfigEnv {}: no Docker config of whoever runs the test is consulted.
  return createK8sBackend({ kubeconfig, dockerConfigEnv: {} });
}

/** The image check of a whole preflight (network 'public': the backend has no 'none'), against a registry of `options`. */
async function imageCheck(
  image: EnvironmentSpecInput['image'],
  options: BearerRegistryOptions = {},
): Promise<{ check: PreflightCheck; seen: ReturnType<typeof bearerRegistry>['seen'] }> {
  const reg = bearerRegistry({
    repos: { 'library/public-app': 'public', 'team/private-app': 'private' },
    users: { alice: PASSWORD },
    refreshTokens: [IDENTITY],
    ...options,
  });
  server.use(...reg.handlers);
  const report = await backend().preflight({ image, network: 'public' });
  expect(
    report.checks.map((c) => c.name),
    JSON.stringify(report.checks),
  ).toEqual(['api', 'rbac', 'spec', 'image', 'nodes']);
  expect(report.checks.find((c) => c.name === 'rbac')?.status).toBe('ok');
  const check = report.checks.find((c) => c.name === 'image')!;
  expect(report.ok).toBe(check.status !== 'fail');
  expect(JSON.stringify(report)).not.toContain(PASSWORD);
  expect(JSON.stringify(report)).not.toContain(IDENTITY);
  return { check, seen: reg.seen };
}

const PRIVATE = `${REGISTRY}/team/private-app:1.0`;
const manifest = (repo: string) => `https://${REGISTRY}/v2/${repo}/manifests/1.0`;

describe('k8s preflight: the image check on a Bearer registry', () => {
  it('a public image: ok, pullable anonymously', async () => {
    const { check } = await imageCheck(`${REGISTRY}/library/public-app:1.0`);
    expect(check).toEqual({ name: 'image', status: 'ok', message: `${REGISTRY}/library/public-app:1.0 is pullable anonymously` });
  });

  it('an identity token from a named pull secret: the refresh_token grant, ok', async () => {
    const { check, seen } = await imageCheck({ ref: PRIVATE, auth: { secretName: 'registry-login' } });
    expect(check).toEqual({ name: 'image', status: 'ok', message: `${PRIVATE} is pullable with the given credentials` });
    expect(seen.find((r) => r.method === 'POST')?.form?.get('refresh_token')).toBe(IDENTITY);
  });

  it('unauthorized: a private image and no credentials fails, saying none were found', async () => {
    const { check } = await imageCheck(PRIVATE);
    expect(check).toMatchObject({
      name: 'image',
      status: 'fail',
      message: `pulling ${PRIVATE} failed: ${PRIVATE}: no basic auth credentials: unauthorized (HEAD ${manifest('team/private-app')} answered 401) (no credentials were found for this registry: pass spec.image.auth)`,
      error: { name: 'ImagePullError', details: { reason: 'unauthorized', image: PRIVATE } },
    });
  });

  it('unauthorized: a wrong password is refused by the token service, and the check says the credentials were rejected', async () => {
    const { check } = await imageCheck({ ref: PRIVATE, auth: { username: 'alice', password: 'not-the-password' } });
    expect(check).toMatchObject({
      status: 'fail',
      message: `pulling ${PRIVATE} failed: ${PRIVATE}: unauthorized: authentication required (GET ${REALM}?service=${SERVICE}&scope=repository%3Ateam%2Fprivate-app%3Apull answered 401) (the registry rejected the credentials given)`,
      error: { details: { reason: 'unauthorized' } },
    });
  });

  it('not_found: a repository that does not exist', async () => {
    const image = `${REGISTRY}/team/no-such-app:1.0`;
    const { check } = await imageCheck({ ref: image, auth: { username: 'alice', password: PASSWORD } });
    expect(check).toMatchObject({
      status: 'fail',
      message: `pulling ${image} failed: ${image}: manifest unknown: not found (HEAD ${manifest('team/no-such-app')} answered 404) (check the repository name and tag)`,
      error: { details: { reason: 'not_found' } },
    });
  });

  it('rate_limited: a 429 with Retry-After fails the check with the wait in its message and its error', async () => {
    const { check } = await imageCheck(PRIVATE, { manifestAnswer: () => new HttpResponse(null, { status: 429, headers: { 'retry-after': '120' } }) });
    expect(check).toMatchObject({
      status: 'fail',
      message: `pulling ${PRIVATE} failed: ${PRIVATE}: toomanyrequests: retry after 120 s (HEAD ${manifest('team/private-app')} answered 429)`,
      error: { details: { reason: 'rate_limited' }, retryAfterMs: 120_000 },
    });
  });

  it('a malformed challenge: a warning that quotes it, not a misleading "unauthorized"', async () => {
    const challenge = `Bearer service="${SERVICE}",scope="repository:team/private-app:pull"`;
    const { check } = await imageCheck(PRIVATE, { challenge });
    expect(check).toEqual({
      name: 'image',
      status: 'warn',
      message: `the registry of ${PRIVATE} could not be asked from here (${REGISTRY} answered 401 with a malformed Bearer challenge (no realm): WWW-Authenticate: ${challenge})`,
    });
  });
});
