import { ConfigError, ImagePullError, hintRemedy, hintText, remedied, type BerthError, type Hint, type ImagePullReason, type Operation } from '../errors.js';

/**
 * Classify the text of a failed pull. The registry's words are all a backend gets, whether they
 * come from Docker's API, a kubelet event or an image build log. Docker Hub's "pull access denied
 * ... does not exist or may require 'docker login'" is both at once: it is unauthorized when no
 * credentials were sent, not_found when they were.
 */
export function pullReason(message: string, hadCredentials: boolean): ImagePullReason {
  if (/toomanyrequests|too many requests|rate limit|\b429\b/i.test(message)) return 'rate_limited';
  if (/pull access denied|may require 'docker login'/i.test(message)) return hadCredentials ? 'not_found' : 'unauthorized';
  if (/no basic auth credentials|unauthorized|authentication required|\bdenied\b|forbidden|\b401\b|\b403\b/i.test(message)) {
    return 'unauthorized';
  }
  if (/manifest unknown|not found|name unknown|does not exist|\b404\b/i.test(message)) return 'not_found';
  return 'transient';
}

export interface PullFailureContext {
  backend: string;
  environmentId?: string;
  operation?: Operation;
  /** The image reference as the caller wrote it (never contains credentials). */
  image: string;
  /** Were credentials sent with the pull? */
  hadCredentials: boolean;
  /** How a user of this backend passes credentials, for the unauthorized hint (remedied when it names the options). */
  credentialsHint?: Hint;
  /** The wait a rate-limited answer asked for (a probe's Retry-After), kept on the error for retries. */
  retryAfterMs?: number;
  cause?: unknown;
}

/** The error for a pull that failed with `message`: an ImagePullError with its reason, or a ConfigError for a malformed reference. */
export function pullFailure(message: string, ctx: PullFailureContext): BerthError {
  const base = {
    operation: ctx.operation ?? ('pull' as const),
    backend: ctx.backend,
    ...(ctx.environmentId ? { environmentId: ctx.environmentId } : {}),
    cause: ctx.cause,
  };
  if (/invalid reference format/i.test(message)) {
    return new ConfigError({ ...base, path: 'spec.image', message: `invalid image reference "${ctx.image}": ${message}` });
  }
  const reason = pullReason(message, ctx.hadCredentials);
  const credentials = reason === 'unauthorized' && !ctx.hadCredentials ? (ctx.credentialsHint ?? remedied('image-auth', 'pass spec.image.auth')) : undefined;
  const hint =
    reason === 'unauthorized'
      ? ctx.hadCredentials
        ? ' (the registry rejected the credentials given)'
        : ` (no credentials were found for this registry: ${hintText(credentials)})`
      : reason === 'not_found'
        ? ' (check the repository name and tag)'
        : '';
  const wait = reason === 'rate_limited' && ctx.retryAfterMs !== undefined ? { retryAfterMs: ctx.retryAfterMs } : {};
  return new ImagePullError({
    ...base,
    ...wait,
    ...hintRemedy(credentials),
    image: ctx.image,
    reason,
    message: `pulling ${ctx.image} failed: ${message}${hint}`,
  });
}

/** The image is not there and the backend was told never to pull it. */
export function notPresentNeverPull(image: string, ctx: { backend: string; environmentId?: string; operation?: Operation }): ImagePullError {
  return new ImagePullError({
    operation: ctx.operation ?? 'pull',
    backend: ctx.backend,
    ...(ctx.environmentId ? { environmentId: ctx.environmentId } : {}),
    image,
    reason: 'not_found',
    message: `image ${image} is not present locally and pullPolicy is 'never'`,
  });
}
