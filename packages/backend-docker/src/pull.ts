import type Docker from 'dockerode';
import {
  CapabilityError,
  ConfigError,
  cancelledFrom,
  registerSecret,
  resolveRegistryCredential,
  type ImageAuth,
  type ImageRef,
  type PullProgress,
} from '@berth/core';
import { mapDaemonError, pullError, statusOf, dockerMessage, type ErrorContext } from './docker-errors.js';

/** The X-Registry-Auth payload Docker's API takes. */
export interface DockerAuthConfig {
  username?: string;
  password?: string;
  identitytoken?: string;
  serveraddress: string;
}

export interface RegistryAuthSources {
  /** Named credentials for `{ secretName }` auth: Docker has no secret store of its own. */
  registrySecrets?: Record<string, { username: string; password: string } | { identityToken: string }>;
  /** Resolves `{ aws }` auth to an ECR login (e.g. via @aws-sdk/client-ecr GetAuthorizationToken). */
  ecrLogin?: (ref: ImageRef, aws: Extract<ImageAuth, { aws: unknown }>['aws']) => Promise<{ username: string; password: string }>;
  /** Environment for Docker config lookup (DOCKER_CONFIG, DOCKER_AUTH_CONFIG); default process.env. */
  env?: Record<string, string | undefined>;
}

/**
 * Credentials for pulling `ref`: the spec's own auth first, else Docker's config (the way the
 * docker CLI finds them). undefined means an anonymous pull.
 */
export async function resolveDockerAuth(
  ref: ImageRef,
  auth: ImageAuth | undefined,
  sources: RegistryAuthSources,
  ctx: ErrorContext,
): Promise<DockerAuthConfig | undefined> {
  const serveraddress = ref.registry === 'docker.io' ? 'https://index.docker.io/v1/' : ref.registry;
  if (auth) {
    if ('username' in auth) {
      registerSecret(auth.password);
      return { username: auth.username, password: auth.password, serveraddress };
    }
    if ('identityToken' in auth) {
      registerSecret(auth.identityToken);
      return { identitytoken: auth.identityToken, serveraddress };
    }
    if ('secretName' in auth) {
      const secret = sources.registrySecrets?.[auth.secretName];
      if (!secret) {
        throw new ConfigError({
          ...ctx,
          path: 'spec.image.auth.secretName',
          message: `no registry secret named "${auth.secretName}": pass it to createDockerBackend({ registrySecrets: { "${auth.secretName}": { username, password } } })`,
        });
      }
      return resolveDockerAuth(ref, secret, sources, ctx);
    }
    if (!sources.ecrLogin) {
      throw new CapabilityError({
        ...ctx,
        capability: 'imageAuth.aws',
        message: `image ${ref.original} asks for AWS (ECR) auth, but this Docker backend has no ecrLogin: pass createDockerBackend({ ecrLogin }) or use { username: 'AWS', password: <aws ecr get-login-password> }`,
      });
    }
    const login = await sources.ecrLogin(ref, auth.aws);
    registerSecret(login.password);
    return { username: login.username, password: login.password, serveraddress };
  }
  const found = await resolveRegistryCredential(ref.registry, sources.env ? { env: sources.env } : {});
  if (!found) return undefined;
  if (found.identityToken) return { identitytoken: found.identityToken, serveraddress: found.serverAddress };
  if (found.username !== undefined && found.password !== undefined) {
    return { username: found.username, password: found.password, serveraddress: found.serverAddress };
  }
  return undefined;
}

interface ProgressLine {
  status?: string;
  id?: string;
  progressDetail?: { current?: number; total?: number };
  error?: string;
  errorDetail?: { message?: string };
}

/**
 * Pull an image, reporting progress. Docker reports a pull as finished even when a progress line
 * carries an error, so every line is read for one.
 */
export async function pullImage(
  docker: Docker,
  image: string,
  auth: DockerAuthConfig | undefined,
  ctx: ErrorContext & { onProgress?: (p: PullProgress) => void; signal?: AbortSignal },
): Promise<void> {
  const errorCtx = { operation: 'pull' as const, backend: ctx.backend, ...(ctx.environmentId ? { environmentId: ctx.environmentId } : {}) };
  let stream: NodeJS.ReadableStream;
  try {
    // abortSignal reaches docker-modem, so a registry that never answers cannot hold start() past its deadline.
    const options: Record<string, unknown> = { ...(auth ? { authconfig: auth } : {}), ...(ctx.signal ? { abortSignal: ctx.signal } : {}) };
    stream = (await docker.pull(image, options)) as NodeJS.ReadableStream;
  } catch (error) {
    if (ctx.signal?.aborted) throw cancelledFrom(ctx.signal, errorCtx);
    const daemon = statusOf(error) === undefined ? mapDaemonError(error, errorCtx) : undefined;
    if (daemon) throw daemon;
    throw pullError(dockerMessage(error), { ...errorCtx, image, hadCredentials: auth !== undefined, cause: error });
  }
  await new Promise<void>((resolve, reject) => {
    let failed = false;
    const onAbort = () => {
      (stream as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
      fail(cancelledFrom(ctx.signal!, errorCtx));
    };
    const fail = (error: unknown) => {
      if (failed) return;
      failed = true;
      ctx.signal?.removeEventListener('abort', onAbort);
      reject(error);
    };
    ctx.signal?.addEventListener('abort', onAbort, { once: true });
    docker.modem.followProgress(
      stream,
      (error: Error | null) => {
        ctx.signal?.removeEventListener('abort', onAbort);
        if (failed) return;
        if (error) {
          const daemon = mapDaemonError(error, errorCtx);
          fail(daemon ?? pullError(dockerMessage(error), { ...errorCtx, image, hadCredentials: auth !== undefined, cause: error }));
          return;
        }
        failed = true;
        resolve();
      },
      (line: ProgressLine) => {
        const message = line.errorDetail?.message ?? line.error;
        if (message) {
          fail(pullError(message, { ...errorCtx, image, hadCredentials: auth !== undefined }));
          return;
        }
        if (ctx.onProgress && line.status) {
          const progress: PullProgress = { image, status: line.status };
          if (line.id) progress.layer = line.id;
          if (line.progressDetail?.current !== undefined) progress.current = line.progressDetail.current;
          if (line.progressDetail?.total !== undefined) progress.total = line.progressDetail.total;
          ctx.onProgress(progress);
        }
      },
    );
  });
}
