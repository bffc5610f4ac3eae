import type { ImageRef } from '../image-ref.js';
import type { PullCredential } from './registry-auth.js';

/**
 * What a registry said about an image, in the words pullFailure classifies. `retryAfterMs` is the
 * wait a 429's Retry-After asked for.
 */
export type ProbeResult = { ok: true } | { ok: false; status?: number; message: string; retryAfterMs?: number };

const MANIFEST_TYPES = [
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
  'application/vnd.docker.distribution.manifest.v2+json',
].join(', ');

/** Loopback registries speak plain HTTP, as every engine assumes for them; the rest HTTPS. */
function baseUrl(ref: ImageRef): string {
  const host = ref.registry === 'docker.io' ? 'registry-1.docker.io' : ref.registry;
  const loopback = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])(:\d+)?$/.test(host);
  return `${loopback ? 'http' : 'https'}://${host}`;
}

function basic(credential: PullCredential | undefined): string | undefined {
  if (!credential || !('username' in credential)) return undefined;
  return `Basic ${Buffer.from(`${credential.username}:${credential.password}`).toString('base64')}`;
}

/** A challenge's parameters (RFC 7235: quoted values may hold commas, e.g. scope="repository:a/b:pull,push"). */
function challengeParams(challenge: string): Record<string, string> {
  const params: Record<string, string> = {};
  for (const m of challenge.replace(/^\s*\S+/, '').matchAll(/([\w-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,"]+))/g)) {
    params[m[1]!.toLowerCase()] = m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : m[3]!;
  }
  return params;
}

/** Retry-After in milliseconds: delta-seconds or an HTTP date. */
function retryAfterMs(res: Response): number | undefined {
  const value = res.headers.get('retry-after')?.trim();
  if (!value) return undefined;
  const ms = /^\d+$/.test(value) ? Number(value) * 1000 : Date.parse(value) - Date.now();
  return Number.isFinite(ms) ? Math.max(0, ms) : undefined;
}

/** A failed answer (the registry's or its token service's) in the words a pull would fail with. */
function failed(ref: ImageRef, credential: PullCredential | undefined, res: Response, request: string): ProbeResult {
  const wait = res.status === 429 ? retryAfterMs(res) : undefined;
  const words =
    res.status === 401
      ? credential
        ? 'unauthorized: authentication required'
        : 'no basic auth credentials: unauthorized'
      : res.status === 404
        ? 'manifest unknown: not found'
        : res.status === 429
          ? `toomanyrequests${wait !== undefined ? `: retry after ${Math.ceil(wait / 1000)} s` : ''}`
          : `HTTP ${res.status}`;
  return {
    ok: false,
    status: res.status,
    message: `${ref.original}: ${words} (${request} answered ${res.status})`,
    ...(wait !== undefined ? { retryAfterMs: wait } : {}),
  };
}

/**
 * The Bearer flow: a token from the challenge's realm, asked for anonymously, with Basic auth, or
 * with an identity token (OAuth2 refresh_token grant). A Response when the token service refused.
 */
async function bearerToken(
  ref: ImageRef,
  challenge: string,
  credential: PullCredential | undefined,
  signal: AbortSignal,
): Promise<{ token: string } | { refused: Response; request: string }> {
  const params = challengeParams(challenge);
  let realm: URL | undefined;
  try {
    realm = params.realm ? new URL(params.realm) : undefined;
  } catch {}
  // Guessing a token service would only turn the registry's fault into a misleading "unauthorized".
  if (!realm || !/^https?:$/.test(realm.protocol)) {
    const why = params.realm === undefined ? 'no realm' : `realm "${params.realm}" is not an http(s) URL`;
    throw new Error(`${ref.registry} answered 401 with a malformed Bearer challenge (${why}): WWW-Authenticate: ${challenge.slice(0, 500)}`);
  }
  const service = params.service;
  // Registries name the scope in the challenge; without one, ask for what a pull needs.
  const scope = params.scope ?? `repository:${ref.repository}:pull`;
  let res: Response;
  if (credential && 'identityToken' in credential) {
    const form = new URLSearchParams({
      grant_type: 'refresh_token',
      refresh_token: credential.identityToken,
      client_id: 'berth',
      scope,
      ...(service !== undefined ? { service } : {}),
    });
    res = await fetch(realm, { method: 'POST', signal, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form });
  } else {
    if (service !== undefined) realm.searchParams.set('service', service);
    realm.searchParams.set('scope', scope);
    const auth = basic(credential);
    res = await fetch(realm, { signal, ...(auth ? { headers: { authorization: auth } } : {}) });
  }
  const request = `${credential && 'identityToken' in credential ? 'POST' : 'GET'} ${realm}`;
  if (!res.ok) return { refused: res, request };
  const body = (await res.json().catch(() => ({}))) as { token?: string; access_token?: string };
  const token = body.token ?? body.access_token;
  if (!token) throw new Error(`the token service of ${ref.registry} (${request}) answered ${res.status} without a token`);
  return { token };
}

/**
 * Ask the registry, without pulling, whether `ref` can be pulled with `credential` (the distribution
 * API's manifest HEAD, with its Basic or Bearer auth dance). For backends that cannot ask an engine
 * (Kubernetes, Modal): the answer reads like a pull's, so pullFailure classifies it the same way.
 * Throws when the registry cannot be asked (unreachable, a malformed challenge).
 */
export async function probeImage(
  ref: ImageRef,
  credential: PullCredential | undefined,
  signal: AbortSignal = AbortSignal.timeout(15_000),
): Promise<ProbeResult> {
  const url = `${baseUrl(ref)}/v2/${ref.repository}/manifests/${ref.digest ?? ref.tag ?? 'latest'}`;
  const headers: Record<string, string> = { accept: MANIFEST_TYPES };
  let res = await fetch(url, { method: 'HEAD', headers, signal });
  if (res.status === 401) {
    const challenge = res.headers.get('www-authenticate') ?? '';
    let authorization: string | undefined;
    if (/^\s*bearer\b/i.test(challenge)) {
      const got = await bearerToken(ref, challenge, credential, signal);
      if ('refused' in got) return failed(ref, credential, got.refused, got.request);
      authorization = `Bearer ${got.token}`;
    } else authorization = basic(credential);
    if (authorization) res = await fetch(url, { method: 'HEAD', headers: { ...headers, authorization }, signal });
  }
  if (res.ok) return { ok: true };
  return failed(ref, credential, res, `HEAD ${url}`);
}
