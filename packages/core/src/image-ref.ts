import type { ImageAuth } from './spec.js';
import { ConfigError } from './errors.js';

/** A parsed, normalised image reference. One parser serves every backend. */
export interface ImageRef {
  /** The reference exactly as given. */
  original: string;
  /** Registry host, with port if any; Docker Hub is always 'docker.io'. */
  registry: string;
  /** Repository path; Docker Hub official images carry their implicit 'library/'. */
  repository: string;
  /** 'latest' when the reference had neither tag nor digest. */
  tag?: string;
  /** e.g. 'sha256:<64 hex>'. */
  digest?: string;
  kind: 'dockerhub' | 'ghcr' | 'ecr' | 'generic';
  ecr?: { accountId: string; region: string };
  /** Fully qualified: registry/repository[:tag][@digest]. */
  canonical: string;
}

const EXPECTED =
  'expected [registry[:port]/]repository[:tag][@sha256:<64 hex digits>], e.g. "ubuntu:22.04", ' + '"ghcr.io/org/app:v1" or "localhost:5000/team/app@sha256:…"';

// The grammar of github.com/distribution/reference.
const PATH_COMPONENT = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
const REPOSITORY_RE = new RegExp(`^${PATH_COMPONENT}(?:/${PATH_COMPONENT})*$`);
const DOMAIN_COMPONENT = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const REGISTRY_RE = new RegExp(`^(?:${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*|\\[[a-fA-F0-9:]+\\])(?::[0-9]+)?$`);
const TAG_RE = /^[\w][\w.-]{0,127}$/;
const DIGEST_RE = /^([A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*):([0-9a-fA-F]{32,})$/;
/** Hex lengths of the algorithms registries actually use; go-digest also requires lowercase hex. */
const DIGEST_HEX_LENGTH: Record<string, number> = { sha256: 64, sha384: 96, sha512: 128 };
const ECR_RE = /^(\d{12})\.dkr\.ecr\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?$/;
const DOCKER_HUB_ALIASES = new Set(['docker.io', 'index.docker.io', 'registry-1.docker.io']);
const DOCKER_HUB_SERVER = 'https://index.docker.io/v1/';
/** Docker's limit on the length of a name (without tag and digest). */
const NAME_MAX = 255;

/** Docker's rule: the first path component is a registry only if it looks like a host. */
function looksLikeRegistry(component: string): boolean {
  return component.includes('.') || component.includes(':') || component === 'localhost';
}

/** Registry hosts are case-insensitive; Docker Hub's aliases all mean 'docker.io'. */
export function normaliseRegistry(host: string): string {
  const lower = host.toLowerCase();
  return DOCKER_HUB_ALIASES.has(lower) ? 'docker.io' : lower;
}

/** The address credentials for a registry host are stored and asked for under: Docker Hub's is its v1 index. */
export function registryServerAddress(registry: string): string {
  const host = normaliseRegistry(registry);
  return host === 'docker.io' ? DOCKER_HUB_SERVER : host;
}

export function parseImageRef(ref: string): ImageRef {
  const fail = (what: string) =>
    new ConfigError({
      message: `Invalid image reference ${JSON.stringify(ref)}: ${what}; ${EXPECTED}`,
      path: 'spec.image',
      operation: 'config',
    });
  if (typeof ref !== 'string' || ref.length === 0) throw fail('it is empty');
  if (ref.includes('://')) throw fail('it must not start with a URL scheme such as "https://"');
  if (/\s/.test(ref)) throw fail('it contains whitespace');

  let name = ref;
  let digest: string | undefined;
  let tag: string | undefined;
  const at = name.indexOf('@');
  if (at >= 0) {
    digest = name.slice(at + 1);
    name = name.slice(0, at);
    const match = DIGEST_RE.exec(digest);
    const want = match ? DIGEST_HEX_LENGTH[match[1]!.toLowerCase()] : undefined;
    if (!match || (want !== undefined && !new RegExp(`^[0-9a-f]{${want}}$`).test(match[2]!))) {
      throw fail(`digest ${JSON.stringify(digest)} is not valid (a sha256 digest is "sha256:" and 64 lowercase hex digits)`);
    }
  }
  // A ':' after the last '/' starts the tag; one before it belongs to a registry port.
  const colon = name.lastIndexOf(':');
  if (colon > name.lastIndexOf('/')) {
    tag = name.slice(colon + 1);
    name = name.slice(0, colon);
    if (!TAG_RE.test(tag)) {
      throw fail(`tag ${JSON.stringify(tag)} is not valid (up to 128 of letters, digits, '_', '.', '-', not starting with '.' or '-')`);
    }
  }
  if (name.length > NAME_MAX) throw fail(`the name is longer than ${NAME_MAX} characters`);

  const slash = name.indexOf('/');
  const first = slash >= 0 ? name.slice(0, slash) : '';
  let registry = 'docker.io';
  let repository = name;
  if (slash >= 0 && looksLikeRegistry(first)) {
    if (!REGISTRY_RE.test(first)) throw fail(`registry host ${JSON.stringify(first)} is not a valid host[:port]`);
    registry = normaliseRegistry(first);
    repository = name.slice(slash + 1);
  }
  if (repository.length === 0) throw fail('the repository name is missing');
  if (registry === 'docker.io' && !repository.includes('/')) repository = `library/${repository}`;
  if (!REPOSITORY_RE.test(repository)) {
    throw fail(
      REPOSITORY_RE.test(repository.toLowerCase())
        ? `repository ${JSON.stringify(repository)} must be lowercase`
        : `repository ${JSON.stringify(repository)} is not valid (path components of lowercase letters and digits, ` +
            `separated by '.', '_', '__' or '-', joined by '/')`,
    );
  }
  if (tag === undefined && digest === undefined) tag = 'latest';

  const out: ImageRef = {
    original: ref,
    registry,
    repository,
    kind: 'generic',
    canonical: `${registry}/${repository}${tag !== undefined ? `:${tag}` : ''}${digest !== undefined ? `@${digest}` : ''}`,
  };
  if (tag !== undefined) out.tag = tag;
  if (digest !== undefined) out.digest = digest;
  const ecr = ECR_RE.exec(registry);
  if (registry === 'docker.io') out.kind = 'dockerhub';
  else if (registry === 'ghcr.io') out.kind = 'ghcr';
  else if (ecr) {
    out.kind = 'ecr';
    out.ecr = { accountId: ecr[1]!, region: ecr[2]! };
  }
  return out;
}

export function formatImageRef(ref: ImageRef): string {
  return ref.canonical;
}

/** Rewrite references starting with `from` to start with `to`, e.g. to use a pull-through mirror. */
export interface MirrorRule {
  from: string;
  to: string;
  /** Credentials for the mirror. The spec's own auth is never sent to a mirror on another host. */
  auth?: ImageAuth;
}

/**
 * Normalise a mirror prefix the way parseImageRef normalises a reference, so 'swebench/' and
 * 'docker.io/swebench/' name the same thing. Returns the fully qualified prefixes it may mean,
 * without a trailing '/': matching is on whole path components anyway (see prefixMatches).
 *
 * Docker Hub is ambiguous: 'python' may mean the namespace docker.io/python/... or the official
 * image docker.io/library/python. A trailing '/' ('swebench/') says "namespace" explicitly; a
 * single Hub component without it matches either. Unlike in a full reference, a prefix without
 * any '/' that looks like a host ('ghcr.io', 'mirror:5001', 'localhost') is a whole registry;
 * scope a rule to a Hub tag by including the namespace: 'library/python:3'.
 */
function prefixCandidates(prefix: string): string[] {
  const namespace = prefix.endsWith('/');
  const trimmed = prefix.replace(/\/+$/, '');
  const slash = trimmed.indexOf('/');
  const first = slash >= 0 ? trimmed.slice(0, slash) : trimmed;
  if (looksLikeRegistry(first)) {
    const registry = normaliseRegistry(first);
    const path = slash >= 0 ? trimmed.slice(slash + 1) : '';
    if (registry === 'docker.io' && path !== '' && !path.includes('/') && !namespace) {
      return [`docker.io/${path}`, `docker.io/library/${path}`];
    }
    return [path === '' ? registry : `${registry}/${path}`];
  }
  if (slash < 0 && !namespace) return [`docker.io/${trimmed}`, `docker.io/library/${trimmed}`];
  return [`docker.io/${trimmed}`];
}

/**
 * `prefix` matches on component boundaries only: 'docker.io/swe' does not match
 * 'docker.io/swebench/x', with or without a trailing '/'. After a repository path, a tag or
 * digest is a boundary too ('docker.io/library/ubuntu' matches 'docker.io/library/ubuntu:22.04');
 * after a bare registry only '/' is ('localhost' does not match 'localhost:5000/x').
 */
function prefixMatches(canonical: string, prefix: string): boolean {
  if (!canonical.startsWith(prefix)) return false;
  const next = canonical.charAt(prefix.length);
  return next === '' || next === '/' || (prefix.includes('/') && (next === ':' || next === '@'));
}

/** Apply the first matching mirror rule; returns the rewritten reference, or the input parsed. */
export function applyMirrors(ref: string | ImageRef, rules: readonly MirrorRule[]): ImageRef {
  const parsed = typeof ref === 'string' ? parseImageRef(ref) : ref;
  for (const rule of rules) {
    for (const from of prefixCandidates(rule.from)) {
      if (!prefixMatches(parsed.canonical, from)) continue;
      // `to` names a location, never an official image, so take it as a namespace.
      const [to] = prefixCandidates(rule.to.endsWith('/') ? rule.to : `${rule.to}/`);
      const rewritten = `${to}${parsed.canonical.slice(from.length)}`;
      try {
        return parseImageRef(rewritten);
      } catch (error) {
        throw new ConfigError({
          message:
            `Mirror rule ${JSON.stringify(`${rule.from}=${rule.to}`)} rewrote ${JSON.stringify(parsed.original)} ` +
            `to ${JSON.stringify(rewritten)}, which is not a valid image reference; fix the rule's "to" prefix`,
          path: 'mirrors',
          operation: 'config',
          cause: error,
        });
      }
    }
  }
  return parsed;
}

export interface MirroredImage {
  /** What to pull: the reference after the mirror rules. */
  image: ImageRef;
  /** Credentials for what is pulled: the spec's for its own registry, the rule's for a mirror. */
  auth?: ImageAuth;
  /** The rule that rewrote the reference, if any. */
  rule?: MirrorRule;
}

/**
 * Apply mirror rules and decide which credentials go where. Credentials written for one registry
 * are only ever sent to that registry: when a rule moves the pull to another host, the rule's own
 * `auth` is used, or none (the backend may then find the mirror's in Docker's config).
 */
export function mirrorImage(ref: string, auth: ImageAuth | undefined, rules: readonly MirrorRule[]): MirroredImage {
  const written = parseImageRef(ref);
  for (const rule of rules) {
    const image = applyMirrors(written, [rule]);
    if (image.canonical === written.canonical) continue;
    const out: MirroredImage = { image, rule };
    const credentials = image.registry === written.registry ? (rule.auth ?? auth) : rule.auth;
    if (credentials) out.auth = credentials;
    return out;
  }
  return auth ? { image: written, auth } : { image: written };
}

/** Parse 'from=to,from2=to2' (commas or newlines between rules), e.g. from an environment variable. */
export function parseMirrorRules(text: string): MirrorRule[] {
  const rules: MirrorRule[] = [];
  for (const raw of text.split(/[,\n]/)) {
    const entry = raw.trim();
    if (entry === '') continue;
    const parts = entry.split('=');
    const from = parts[0]?.trim() ?? '';
    const to = parts[1]?.trim() ?? '';
    const problem =
      parts.length !== 2 || from === '' || to === ''
        ? 'it must be exactly one "from=to" pair with both sides non-empty'
        : /\s/.test(from + to)
          ? 'a prefix contains whitespace'
          : (from + to).includes('://')
            ? 'a prefix must not have a URL scheme such as "https://"'
            : (from + to).includes('@')
              ? 'a prefix must not contain a digest'
              : undefined;
    if (problem) {
      throw new ConfigError({
        message:
          `Invalid mirror rule ${JSON.stringify(entry)}: ${problem}; expected comma-separated from=to prefix pairs, ` +
          `e.g. "docker.io/swebench/=mirror:5001/swebench/"`,
        path: 'mirrors',
        operation: 'config',
      });
    }
    rules.push({ from, to });
  }
  return rules;
}
