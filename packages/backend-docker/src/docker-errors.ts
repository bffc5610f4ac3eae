import { BackendAuthError, BackendUnavailableError, BerthError, ConfigError, SandboxLostError, remedied, type Operation } from '@berth/core';
import { unreachableApi } from '@berth/core/backend-kit';

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

/**
 * The engine's own words for a failed call. docker-modem prefixes its message with the HTTP
 * status ("(HTTP code 500) server error - ..."), which misleads when the engine relays a registry's
 * refusal (a missing credential is not a server error): the prefix is dropped.
 */
export function dockerMessage(error: unknown): string {
  const e = error as DockerApiError;
  let text = String(error);
  if (e && typeof e === 'object') {
    if (e.json && typeof e.json === 'object' && typeof e.json.message === 'string') text = e.json.message;
    else if (typeof e.json === 'string' && e.json.length > 0) text = e.json;
    else if (typeof e.message === 'string') text = e.message;
  }
  return text.replace(/^\(HTTP code \d+\) [^-]*- /, '').trim();
}

export function statusOf(error: unknown): number | undefined {
  const code = (error as DockerApiError | undefined)?.statusCode;
  return typeof code === 'number' ? code : undefined;
}

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
  const unreachable = unreachableApi(error, { ...ctx, what: 'the Docker daemon', hint: 'is dockerd running and DOCKER_HOST right?' });
  if (unreachable) return unreachable;
  const status = statusOf(error);
  // The engine answers 500 for some deterministic refusals too (a tar that cannot be applied):
  // those are not an unavailable daemon, and retrying them cannot help.
  const deterministic =
    /no such container|is not running|not found|error processing tar file|not a directory|cannot overwrite|file exists|read-only file system|no space left/i;
  if (status !== undefined && status >= 500 && !deterministic.test(dockerMessage(error))) {
    return new BackendUnavailableError({ ...ctx, message: `the Docker daemon failed: ${dockerMessage(error)}`, cause: error });
  }
  return undefined;
}

const NOT_RUNNING =
  /is not running|is restarting|is paused|container .* is dead|no such container|removal of container .* is already in progress|cannot exec in a stopped/i;

/** Is this the engine saying the container is gone or stopped? */
export function isContainerGone(error: unknown): boolean {
  return NOT_RUNNING.test(dockerMessage(error));
}

/** Map a failure of an operation on a running environment. */
export function mapEnvironmentError(error: unknown, ctx: ErrorContext & { environmentId: string }): BerthError | undefined {
  if (BerthError.isInstance(error)) return error;
  // The engine forgot the command's exec instance: it does so when the container goes. The kit
  // asks whether the sandbox lives, and makes this a SandboxLostError when it does not.
  if (statusOf(error) === 404 && /no such exec/i.test(dockerMessage(error))) {
    return new BackendUnavailableError({
      ...ctx,
      message: `the Docker engine no longer knows the command's exec instance: ${dockerMessage(error)}`,
      cause: error,
    });
  }
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

/** How a Docker user passes registry credentials, for pull errors. */
export const CREDENTIALS_HINT = remedied('image-auth-docker-config', 'pass spec.image.auth or log in with docker login');

/** Start failures that say the spec or image is wrong: permanent, with the fix in the message. */
export function startRefusal(error: unknown, ctx: ErrorContext, image: string): BerthError | undefined {
  if (BerthError.isInstance(error)) return error;
  const message = dockerMessage(error);
  const config = (path: string, text: string) => new ConfigError({ ...ctx, path, message: text, cause: error });
  if (/bind source path does not exist|invalid mount config/i.test(message)) {
    return config('spec.mounts', `a mount was refused by Docker: ${message}`);
  }
  if (/executable file not found|\/bin\/sh|no such file or directory/i.test(message)) {
    return config('spec.image', `image ${image} cannot run berth's init (/bin/sh): ${message}`);
  }
  if (/Minimum memory limit|NanoCPUs|range of CPUs|cannot be larger/i.test(message)) {
    return config('spec.resources', `resources refused by Docker: ${message}`);
  }
  return undefined;
}
