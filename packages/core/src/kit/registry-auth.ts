import { resolveRegistryCredential } from '../credentials.js';
import { CapabilityError, ConfigError, type Operation } from '../errors.js';
import { registryServerAddress, type ImageRef } from '../image-ref.js';
import { registerSecret } from '../redact.js';
import type { ImageAuth } from '../spec.js';

/** Credentials to pull one image with, whatever the backend does with them. */
export type PullCredential = { serverAddress: string } & ({ username: string; password: string } | { identityToken: string });

export type RegistrySecret = { username: string; password: string } | { identityToken: string };
export type AwsAuth = Extract<ImageAuth, { aws: unknown }>['aws'];

/** Where credentials come from, besides the spec. */
export interface PullCredentialSources {
  /** Named credentials for `{ secretName }` auth, for backends with no secret store of their own. */
  registrySecrets?: Record<string, RegistrySecret>;
  /** Resolves `{ aws }` auth to an ECR login (e.g. via @aws-sdk/client-ecr GetAuthorizationToken). */
  ecrLogin?: (ref: ImageRef, aws: AwsAuth) => Promise<{ username: string; password: string }>;
  /** Where Docker-config credentials are looked up (see CommonBackendOptions.dockerConfigEnv). */
  dockerConfigEnv?: Record<string, string | undefined>;
}

export interface PullAuthContext {
  backend: string;
  operation: Operation;
  environmentId?: string;
  /** The backend's factory, for messages that say how to configure it, e.g. 'createDockerBackend'. */
  factory: string;
}

/**
 * Refuse, before any I/O, spec auth these sources cannot resolve: a `secretName` nobody defined,
 * `aws` auth without an ecrLogin. The same check runs again when credentials are resolved.
 */
export function checkPullAuth(auth: ImageAuth | undefined, sources: PullCredentialSources, ctx: PullAuthContext): void {
  const base = { backend: ctx.backend, operation: ctx.operation, ...(ctx.environmentId ? { environmentId: ctx.environmentId } : {}) };
  if (auth && 'secretName' in auth && !sources.registrySecrets?.[auth.secretName]) {
    throw new ConfigError({
      ...base,
      path: 'spec.image.auth.secretName',
      message: `no registry secret named "${auth.secretName}": pass ${ctx.factory}({ registrySecrets: { "${auth.secretName}": { username, password } } })`,
    });
  }
  if (auth && 'aws' in auth && !sources.ecrLogin) {
    throw new CapabilityError({
      ...base,
      capability: 'imageAuth.aws',
      message: `ECR auth needs ${ctx.factory}({ ecrLogin }); or pass { username: 'AWS', password: <aws ecr get-login-password> }`,
    });
  }
}

/**
 * Credentials for pulling `ref`: the spec's own auth first (a named secret, an ECR login), else
 * Docker's config, the way the docker CLI finds them. undefined means an anonymous pull. Every
 * secret found is registered for redaction.
 */
export async function resolvePullCredential(
  ref: ImageRef,
  auth: ImageAuth | undefined,
  sources: PullCredentialSources,
  ctx: PullAuthContext,
): Promise<PullCredential | undefined> {
  const serverAddress = registryServerAddress(ref.registry);
  checkPullAuth(auth, sources, ctx);
  if (auth && 'secretName' in auth) return resolvePullCredential(ref, sources.registrySecrets![auth.secretName], sources, ctx);
  if (auth && 'aws' in auth) {
    const login = await sources.ecrLogin!(ref, auth.aws);
    registerSecret(login.password);
    return { serverAddress, username: login.username, password: login.password };
  }
  if (auth && 'username' in auth) {
    registerSecret(auth.password);
    return { serverAddress, username: auth.username, password: auth.password };
  }
  if (auth && 'identityToken' in auth) {
    registerSecret(auth.identityToken);
    return { serverAddress, identityToken: auth.identityToken };
  }
  const found = await resolveRegistryCredential(ref.registry, sources.dockerConfigEnv ? { env: sources.dockerConfigEnv } : {});
  if (found?.identityToken) return { serverAddress: found.serverAddress, identityToken: found.identityToken };
  if (found?.username !== undefined && found.password !== undefined) {
    return { serverAddress: found.serverAddress, username: found.username, password: found.password };
  }
  return undefined;
}
