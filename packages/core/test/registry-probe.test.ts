// The registry probe's Bearer flow (GHCR, Docker Hub, most cloud registries), against exact HTTP
// answers from msw: the challenge, the token request, the retried HEAD, and how the answer classifies.
import { setupServer } from 'msw/node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ImagePullError, parseImageRef } from '@berth/core';
import { probeImage, pullFailure, type ProbeResult, type PullCredential } from '@berth/core/backend-kit';
import { HttpResponse } from 'msw';
import { REALM, REGISTRY, SERVICE, bearerRegistry, challengeFor, type BearerRegistryOptions } from '@berth/test-support/bearer-registry';

const server = setupServer();
beforeAll(() => server.listen({ onUnhandledRequest: 'error' }));
afterEach(() => server.resetHandlers());
afterAll(() => server.close());

const PASSWORD = 'pw-Zq81-never-printed';
const USER: PullCredential = { serverAddress: REGISTRY, username: 'alice', password: PASSWORD };
const BASIC = `Basic ${Buffer.from(`alice:${PASSWORD}`).toString('base64')}`;
const IDENTITY = 'refresh-Kx77-never-printed';
const REPOS: BearerRegistryOptions['repos'] = { 'library/public-app': 'public', 'team/private-app': 'private' };

/** The registry of `options`, answering this test's requests. */
function registry(options: BearerRegistryOptions = {}) {
  const reg = bearerRegistry({ repos: REPOS, users: { alice: PASSWORD }, refreshTokens: [IDENTITY], ...options });
  server.use(...reg.handlers);
  return reg;
}
const ref = (repo: string, tag = '1.0') => parseImageRef(`${REGISTRY}/${repo}:${tag}`);
const manifest = (repo: string, tag = '1.0') => `https://${REGISTRY}/v2/${repo}/manifests/${tag}`;
const classify = (probe: ProbeResult, image: string, hadCredentials: boolean) => {
  if (probe.ok) throw new Error('expected a failed probe');
  return pullFailure(probe.message, { backend: 'test', image, hadCredentials, retryAfterMs: probe.retryAfterMs });
};
/** Everything a user could be shown of an outcome. */
const shown = (...things: unknown[]) => things.map((t) => (t instanceof Error ? `${t.message} ${JSON.stringify(t)}` : JSON.stringify(t))).join('\n');
const SECRETS = (issued: Iterable<string>) => [PASSWORD, BASIC.slice(6), IDENTITY, ...issued];

describe('registry probe: the Bearer challenge and the token', () => {
  it('a public image: the challenge is parsed, an anonymous token asked for with its service and scope, and sent on the retried HEAD', async () => {
    const reg = registry();
    await expect(probeImage(ref('library/public-app'), undefined)).resolves.toEqual({ ok: true });
    expect(reg.seen.map((r) => `${r.method} ${r.url.origin}${r.url.pathname}`)).toEqual([
      `HEAD ${manifest('library/public-app')}`,
      `GET ${REALM}`,
      `HEAD ${manifest('library/public-app')}`,
    ]);
    const [first, token, retried] = reg.seen;
    expect(first!.authorization).toBeNull();
    expect(Object.fromEntries(token!.url.searchParams)).toEqual({ service: SERVICE, scope: 'repository:library/public-app:pull' });
    expect(token!.authorization).toBeNull();
    expect(retried!.authorization).toBe('Bearer issued-token-1-anon');
  });

  it('a private image with a username and password: Basic auth at the token service, its token on the HEAD', async () => {
    const reg = registry();
    await expect(probeImage(ref('team/private-app'), USER)).resolves.toEqual({ ok: true });
    const [, token, retried] = reg.seen;
    expect(token!.authorization).toBe(BASIC);
    expect(token!.url.searchParams.get('scope')).toBe('repository:team/private-app:pull');
    expect(retried!.authorization).toBe('Bearer issued-token-1-user');
  });

  it('an identity token: the OAuth2 refresh_token grant, POSTed as a form without Basic auth', async () => {
    const reg = registry();
    await expect(probeImage(ref('team/private-app'), { serverAddress: REGISTRY, identityToken: IDENTITY })).resolves.toEqual({ ok: true });
    const [, token, retried] = reg.seen;
    expect(token!.method).toBe('POST');
    expect(token!.authorization).toBeNull();
    expect(Object.fromEntries(token!.form!)).toMatchObject({
      grant_type: 'refresh_token',
      refresh_token: IDENTITY,
      service: SERVICE,
      scope: 'repository:team/private-app:pull',
    });
    expect(retried!.authorization).toBe('Bearer issued-token-1-user');
  });

  it('parameters in any order, spaces after commas, and a comma inside a quoted scope', async () => {
    const challenge = `Bearer scope="repository:team/private-app:pull,push", realm="${REALM}", service="${SERVICE}"`;
    const reg = registry({ challenge });
    await expect(probeImage(ref('team/private-app'), USER)).resolves.toEqual({ ok: true });
    expect(Object.fromEntries(reg.seen[1]!.url.searchParams)).toEqual({ service: SERVICE, scope: 'repository:team/private-app:pull,push' });
  });

  it('a challenge without a scope: the probe asks for pull on the repository itself', async () => {
    const reg = registry({ challenge: `Bearer realm="${REALM}",service="${SERVICE}"` });
    await expect(probeImage(ref('library/public-app'), undefined)).resolves.toEqual({ ok: true });
    expect(reg.seen[1]!.url.searchParams.get('scope')).toBe('repository:library/public-app:pull');
  });
});

describe('registry probe: failures, and how they classify', () => {
  it('401 after an anonymous token (a private image, no credentials): unauthorized, with the hint to give credentials', async () => {
    const reg = registry();
    const probe = await probeImage(ref('team/private-app'), undefined);
    expect(probe).toMatchObject({ ok: false, status: 401 });
    expect(reg.seen.map((r) => r.authorization)).toEqual([null, null, 'Bearer issued-token-1-anon']);
    const error = classify(probe, ref('team/private-app').original, false);
    expect(ImagePullError.isInstance(error) && error.reason).toBe('unauthorized');
    expect(error.message).toContain('no credentials were found for this registry');
  });

  it('401 after a token for the given credentials (insufficient_scope): unauthorized, the credentials rejected', async () => {
    registry({
      manifestAnswer: () =>
        new HttpResponse(null, { status: 401, headers: { 'www-authenticate': `${challengeFor('team/private-app')},error="insufficient_scope"` } }),
    });
    const probe = await probeImage(ref('team/private-app'), USER);
    expect(probe).toMatchObject({ ok: false, status: 401 });
    const error = classify(probe, ref('team/private-app').original, true);
    expect(ImagePullError.isInstance(error) && error.reason).toBe('unauthorized');
    expect(error.message).toContain('the registry rejected the credentials given');
  });

  it('the token service refuses the password: unauthorized, naming the token service, and the manifest is not asked again', async () => {
    const reg = registry({ users: { alice: 'another-password' } });
    const probe = await probeImage(ref('team/private-app'), USER);
    expect(probe).toEqual({
      ok: false,
      status: 401,
      message: `${REGISTRY}/team/private-app:1.0: unauthorized: authentication required (GET ${REALM}?service=${SERVICE}&scope=repository%3Ateam%2Fprivate-app%3Apull answered 401)`,
    });
    expect(reg.seen.map((r) => r.method)).toEqual(['HEAD', 'GET']);
    const error = classify(probe, ref('team/private-app').original, true);
    expect(ImagePullError.isInstance(error) && error.reason).toBe('unauthorized');
  });

  it('the token service refuses an identity token: unauthorized', async () => {
    registry({ refreshTokens: [] });
    const probe = await probeImage(ref('team/private-app'), { serverAddress: REGISTRY, identityToken: IDENTITY });
    expect(probe).toMatchObject({ ok: false, status: 401, message: expect.stringContaining(`POST ${REALM}`) });
    expect((classify(probe, 'x', true) as ImagePullError).reason).toBe('unauthorized');
  });

  it('404 after the token: not_found', async () => {
    registry();
    const probe = await probeImage(ref('team/no-such-app'), USER);
    expect(probe).toEqual({
      ok: false,
      status: 404,
      message: `${REGISTRY}/team/no-such-app:1.0: manifest unknown: not found (HEAD ${manifest('team/no-such-app')} answered 404)`,
    });
    const error = classify(probe, ref('team/no-such-app').original, true);
    expect(ImagePullError.isInstance(error) && error.reason).toBe('not_found');
    expect(error.message).toContain('check the repository name and tag');
  });

  it('429 with Retry-After in seconds: rate_limited, the wait in the message and in retryAfterMs', async () => {
    registry({ manifestAnswer: () => new HttpResponse(null, { status: 429, headers: { 'retry-after': '30' } }) });
    const probe = await probeImage(ref('library/public-app'), undefined);
    expect(probe).toEqual({
      ok: false,
      status: 429,
      retryAfterMs: 30_000,
      message: `${REGISTRY}/library/public-app:1.0: toomanyrequests: retry after 30 s (HEAD ${manifest('library/public-app')} answered 429)`,
    });
    const error = classify(probe, ref('library/public-app').original, false);
    expect(error).toMatchObject({ reason: 'rate_limited', retryAfterMs: 30_000, retryable: true });
    expect(ImagePullError.isInstance(error) && error.toJSON()).toMatchObject({ retryAfterMs: 30_000 });
  });

  it('429 with Retry-After as a date, from the token service: rate_limited, not unauthorized', async () => {
    const at = new Date(Date.now() + 90_000);
    registry({ tokenAnswer: () => HttpResponse.json({ details: 'slow down' }, { status: 429, headers: { 'retry-after': at.toUTCString() } }) });
    const probe = await probeImage(ref('library/public-app'), undefined);
    expect(probe).toMatchObject({ ok: false, status: 429 });
    if (probe.ok) return;
    expect(probe.retryAfterMs).toBeGreaterThan(80_000);
    expect(probe.retryAfterMs).toBeLessThanOrEqual(90_000);
    expect((classify(probe, 'x', false) as ImagePullError).reason).toBe('rate_limited');
  });

  it('the token service failing (503): transient, not unauthorized', async () => {
    registry({ tokenAnswer: () => new HttpResponse('upstream down', { status: 503 }) });
    const probe = await probeImage(ref('library/public-app'), undefined);
    expect(probe).toMatchObject({ ok: false, status: 503 });
    expect((classify(probe, 'x', false) as ImagePullError).reason).toBe('transient');
  });

  it('a token service that answers 200 without a token: an error saying so, not "unauthorized"', async () => {
    registry({ tokenAnswer: () => HttpResponse.json({ expires_in: 300 }) });
    await expect(probeImage(ref('library/public-app'), undefined)).rejects.toThrow(
      `the token service of ${REGISTRY} (GET ${REALM}?service=${SERVICE}&scope=repository%3Alibrary%2Fpublic-app%3Apull) answered 200 without a token`,
    );
  });

  it.each([
    ['no realm', `Bearer service="${SERVICE}",scope="repository:library/public-app:pull"`],
    ['a realm that is not an http(s) URL', 'Bearer realm="not a url",service="x"'],
    ['no parameters at all', 'Bearer'],
  ])('a malformed challenge (%s) is an error that says so and quotes it; no token is asked for', async (_, challenge) => {
    const reg = registry({ challenge });
    const error = await probeImage(ref('library/public-app'), USER).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toMatch(new RegExp(`^${REGISTRY} answered 401 with a malformed Bearer challenge \\(.+\\): WWW-Authenticate: `));
    expect(error?.message).toContain(challenge);
    expect(error?.message).not.toMatch(/unauthori[sz]ed|not found/i);
    expect(reg.seen.map((r) => r.method)).toEqual(['HEAD']);
  });

  it('no password, identity token or registry token appears in any message or serialised error', async () => {
    const outcomes: unknown[] = [];
    const cases: Array<[BearerRegistryOptions, PullCredential]> = [
      [{ users: {} }, USER],
      [{ refreshTokens: [] }, { serverAddress: REGISTRY, identityToken: IDENTITY }],
      [{ manifestAnswer: () => new HttpResponse(null, { status: 401 }) }, USER],
      [{ manifestAnswer: () => new HttpResponse(null, { status: 429, headers: { 'retry-after': '5' } }) }, USER],
      [{ tokenAnswer: () => new HttpResponse(`echo ${PASSWORD}`, { status: 500 }) }, USER],
      [{ challenge: 'Bearer service="x"' }, USER],
    ];
    const issued: string[] = [];
    for (const [options, credential] of cases) {
      server.resetHandlers();
      const reg = registry(options);
      const probe = await probeImage(ref('team/private-app'), credential).catch((e: unknown) => e);
      outcomes.push(probe, ...(probe instanceof Error || (probe as ProbeResult).ok ? [] : [classify(probe as ProbeResult, 'x', true)]));
      issued.push(...reg.grants.keys());
    }
    expect(issued.length).toBeGreaterThan(1);
    const text = shown(...outcomes);
    for (const secret of SECRETS(issued)) expect(text).not.toContain(secret);
  });
});
