import {
  BackendAuthError,
  BackendUnavailableError,
  BerthError,
  ConfigError,
  ImagePullError,
  SandboxLostError,
  type ImagePullReason,
  type Operation,
} from '@berth/core';

/** What docker-modem attaches to a failed API call. */
export interface DockerApiError extends Error {
  statusCode?: number;
  reason?: string;
  code?: string;
  json?: { message?: string } | string | null;
}

export interface ErrorContext {
  operation: Operation;
  backend: string;
  environmentId?: string;
}

export function dockerMessage(error: unknown): string {
  const e = error as DockerApiError;
  if (e && typeof e === 'object') {
    if (e.json && typeof e.json === 'object' && typeof e.json.message === 'string') return e.json.message;
    if (typeof e.json === 'string' && e.json.length > 0) return e.json;
    if (typeof e.message === 'string') return e.message;
  }
  return String(error);
}

export function statusOf(error: unknown): number | undefined {
  const code = (error as DockerApiError | undefined)?.statusCode;
  return typeof code === 'number' ? code : undefined;
}

const UNREACHABLE_CODES = new Set(['ENOENT', 'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND']);

/** Daemon-level failures every call can hit: unreachable daemon, no permission, 5xx. */
export function mapDaemonError(error: unknown, ctx: ErrorContext): BerthError | undefined {
  if (BerthError.isInstance(error)) return error;
  const e = error as DockerApiError;
  if (e?.code === 'EACCES') {
    return new BackendAuthError({
      ...ctx,
      message: `permission denied talking to the Docker daemon (${e.message}); run as a user in the docker group or point DOCKER_HOST at a daemon you may use`,
      cause: error,
    });
  }
  if (typeof e?.code === 'string' && UNREACHABLE_CODES.has(e.code)) {
    return new BackendUnavailableError({
      ...ctx,
      message: `the Docker daemon is unreachable (${e.code}); is dockerd running and DOCKER_HOST right?`,
      cause: error,
    });
  }
  const status = statusOf(error);
  // The engine answers 500 for some deterministic refusals too (a tar that cannot be applied):
  // those are not an unavailable daemon, and retrying them cannot help.
  const deterministic = /no such container|is not running|not found|error processing tar file|not a directory|cannot overwrite|file exists|read-only file system|no space left/i;
  if (status !== undefined && status >= 500 && !deterministic.test(dockerMessage(error))) {
    return new BackendUnavailableError({ ...ctx, message: `the Docker daemon failed: ${dockerMessage(error)}`, cause: error });
  }
  return undefined;
}

const NOT_RUNNING = /is not running|is restarting|is paused|container .* is dead|no such container|removal of container .* is already in progress|cannot exec in a stopped/i;

/** Is this the engine saying the container is gone or stopped? */
export function isContainerGone(error: unknown): boolean {
  return NOT_RUNNING.test(dockerMessage(error));
}

/** Map a failure of an operation on a running environment. */
export function mapEnvironmentError(error: unknown, ctx: ErrorContext & { environmentId: string }): BerthError | undefined {
  if (BerthError.isInstance(error)) return error;
  if (isContainerGone(error)) {
    return new SandboxLostError({
      ...ctx,
      message: `sandbox ${ctx.environmentId} is gone: ${dockerMessage(error)}`,
      lastState: statusOf(error) === 404 ? 'removed' : 'not running',
      cause: error,
    });
  }
  return mapDaemonError(error, ctx);
}

/**
 * Classify the text of a failed pull. The registry's words are all we get, and Docker Hub's
 * "pull access denied ... does not exist or may require 'docker login'" is both at once: it is
 * unauthorized when no credentials were sent, not_found when they were.
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

export function pullError(
  message: string,
  ctx: ErrorContext & { image: string; hadCredentials: boolean; cause?: unknown },
): BerthError {
  if (/invalid reference format/i.test(message)) {
    return new ConfigError({
      operation: 'pull',
      backend: ctx.backend,
      ...(ctx.environmentId ? { environmentId: ctx.environmentId } : {}),
      path: 'spec.image',
      message: `invalid image reference "${ctx.image}": ${message}`,
      cause: ctx.cause,
    });
  }
  const reason = pullReason(message, ctx.hadCredentials);
  const hint =
    reason === 'unauthorized'
      ? ctx.hadCredentials
        ? ' (the registry rejected the credentials given)'
        : ' (no credentials were found for this registry: pass spec.image.auth or log in with docker login)'
      : reason === 'not_found'
        ? ' (check the repository name and tag)'
        : '';
  return new ImagePullError({
    operation: 'pull',
    backend: ctx.backend,
    ...(ctx.environmentId ? { environmentId: ctx.environmentId } : {}),
    image: ctx.image,
    reason,
    message: `pulling ${ctx.image} failed: ${message}${hint}`,
    cause: ctx.cause,
  });
}
