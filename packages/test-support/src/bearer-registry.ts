// A registry with token auth, as msw handlers: the manifest HEAD answers 401 with a Bearer
// challenge, the token service (on another host, as GHCR's and Docker Hub's are) hands out tokens
// anonymously for public repositories and for a username/password or an identity token otherwise.
// Everything is answered in-process: with onUnhandledRequest 'error' no packet leaves the machine.
import { http, HttpResponse } from 'msw';

export const REGISTRY = 'registry.example.test';
export const REALM = 'https://auth.example.test/token';
export const SERVICE = 'registry.example.test';

/** The challenge a registry sends for a repository, exactly as GHCR and Docker Hub word it. */
export const challengeFor = (repo: string, actions = 'pull') => `Bearer realm="${REALM}",service="${SERVICE}",scope="repository:${repo}:${actions}"`;

export interface BearerRegistryOptions {
  /** Repositories that exist, and whether an anonymous token may pull them. */
  repos?: Record<string, 'public' | 'private'>;
  /** username -> password, for Basic auth at the token service. */
  users?: Record<string, string>;
  /** Identity (refresh) tokens the token service accepts in its OAuth2 POST. */
  refreshTokens?: readonly string[];
  /** Sent instead of challengeFor(repo) on the first, unauthenticated HEAD. */
  challenge?: string;
  /** What an authorized manifest HEAD answers instead of 200/404 (e.g. a 429). */
  manifestAnswer?: () => Response;
  /** What the token service answers instead of its own judgement. */
  tokenAnswer?: () => Response;
}

export interface SeenRequest {
  method: string;
  url: URL;
  authorization: string | null;
  /** The form of a POST to the token service. */
  form?: URLSearchParams;
}

export function bearerRegistry(options: BearerRegistryOptions = {}) {
  const repos = options.repos ?? {};
  const seen: SeenRequest[] = [];
  /** Issued token -> the repositories it may pull. */
  const grants = new Map<string, Set<string>>();

  const grant = (scope: string | null, user: boolean): Response => {
    const allowed = new Set<string>();
    // scope is "repository:<name>:<actions>", several separated by spaces.
    for (const one of (scope ?? '').split(' ')) {
      const m = /^repository:(.+):([a-z,*]+)$/.exec(one);
      if (m && m[2]!.split(',').includes('pull') && (user || repos[m[1]!] === 'public')) allowed.add(m[1]!);
    }
    const token = `issued-token-${grants.size + 1}-${user ? 'user' : 'anon'}`;
    grants.set(token, allowed);
    return HttpResponse.json({ token, access_token: token, expires_in: 300 });
  };

  const handlers = [
    http.head(`https://${REGISTRY}/v2/*`, ({ request }) => {
      const url = new URL(request.url);
      const authorization = request.headers.get('authorization');
      seen.push({ method: 'HEAD', url, authorization });
      const m = /^\/v2\/(.+)\/manifests\/([^/]+)$/.exec(url.pathname);
      if (!m) return new HttpResponse(null, { status: 404 });
      const repo = m[1]!;
      const granted = authorization?.startsWith('Bearer ') ? grants.get(authorization.slice(7)) : undefined;
      if (!granted) {
        return new HttpResponse(null, { status: 401, headers: { 'www-authenticate': options.challenge ?? challengeFor(repo) } });
      }
      if (options.manifestAnswer) return options.manifestAnswer();
      // A token without pull on the repository: insufficient_scope, as real registries answer.
      if (!granted.has(repo)) {
        return new HttpResponse(null, { status: 401, headers: { 'www-authenticate': `${challengeFor(repo)},error="insufficient_scope"` } });
      }
      return new HttpResponse(null, { status: repos[repo] ? 200 : 404 });
    }),
    http.get(REALM, ({ request }) => {
      const url = new URL(request.url);
      const authorization = request.headers.get('authorization');
      seen.push({ method: 'GET', url, authorization });
      if (options.tokenAnswer) return options.tokenAnswer();
      if (url.searchParams.get('service') !== SERVICE) return HttpResponse.json({ details: 'invalid service' }, { status: 400 });
      if (!authorization) return grant(url.searchParams.get('scope'), false);
      const [user, ...rest] = Buffer.from(authorization.replace(/^Basic /, ''), 'base64')
        .toString('utf8')
        .split(':');
      if (!authorization.startsWith('Basic ') || options.users?.[user!] !== rest.join(':')) {
        return HttpResponse.json({ details: 'incorrect username or password' }, { status: 401 });
      }
      return grant(url.searchParams.get('scope'), true);
    }),
    http.post(REALM, async ({ request }) => {
      const form = new URLSearchParams(await request.text());
      seen.push({ method: 'POST', url: new URL(request.url), authorization: request.headers.get('authorization'), form });
      if (options.tokenAnswer) return options.tokenAnswer();
      if (form.get('grant_type') !== 'refresh_token' || !options.refreshTokens?.includes(form.get('refresh_token') ?? '')) {
        return HttpResponse.json({ error: 'invalid_grant' }, { status: 401 });
      }
      return grant(form.get('scope'), true);
    }),
  ];
  return { handlers, seen, grants };
}
