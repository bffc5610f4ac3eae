import type { Readable } from 'node:stream';
import Docker from 'dockerode';
import { BackendUnavailableError, ConfigError, parseImageRef, type ImageAuth, type ImageBuilder, type ImageBuildRequest } from '@berth/core';
import { hashBuildContext, probeImage, raceAbort, resolvePullCredential, type PullCredential } from '@berth/core/backend-kit';
import { DockerImageBuilder } from './build.js';
import { dockerMessage, mapDaemonError } from './docker-errors.js';
import { BACKEND } from './identity.js';
import type { DockerBackendOptions } from './options.js';
import { dockerAuthConfig, jsonLines } from './pull.js';

export interface RegistryImageBuilderOptions extends DockerBackendOptions {
  /**
   * Where built images are pushed, e.g. 'registry.example/team/berth-builds': each build is tagged
   * there by its content hash, so an unchanged context is built and pushed once.
   */
  repository: string;
  /**
   * Credentials to push with; handed on to the backend to pull with. Default: what Docker's config
   * (or `registrySecrets`) has for the registry, which the backend then finds the same way.
   */
  auth?: { username: string; password: string } | { identityToken: string };
}

/**
 * Builds `image: { build }` specs with the local Docker engine and pushes them to a registry, for
 * backends that cannot build from a local directory (Kubernetes). The image is asked of the
 * registry first: one built and pushed before, by any machine, is used as is.
 */
export class RegistryImageBuilder implements ImageBuilder {
  readonly name: string;
  readonly #options: RegistryImageBuilderOptions;
  readonly #docker: Docker;
  readonly #builder: DockerImageBuilder;
  /** One push per tag at a time: concurrent starts of one context share it. */
  readonly #pushing = new Map<string, Promise<void>>();

  constructor(options: RegistryImageBuilderOptions) {
    const repository = options.repository?.replace(/\/+$/, '');
    if (!repository || /[:@]/.test(repository.split('/').slice(1).join('/'))) {
      throw new ConfigError({
        operation: 'config',
        backend: BACKEND,
        path: 'repository',
        message: `repository must be a registry repository without a tag, e.g. 'registry.example/team/berth-builds'; got ${JSON.stringify(options.repository)}`,
      });
    }
    this.#options = { ...options, repository };
    const { socketPath, host, port, protocol } = options;
    this.#docker = socketPath || host ? new Docker({ socketPath, host, port, protocol } as Docker.DockerOptions) : new Docker();
    this.#builder = new DockerImageBuilder(this.#docker, options);
    this.name = `docker build + push to ${repository}`;
  }

  async build(request: ImageBuildRequest): Promise<{ ref: string; auth?: ImageAuth }> {
    const ctx = { operation: 'build' as const, backend: request.backend, ...(request.environmentId ? { environmentId: request.environmentId } : {}) };
    const target = `${this.#options.repository}:${(await hashBuildContext(request.build)).slice(0, 40)}`;
    const ref = parseImageRef(target);
    const credential = await resolvePullCredential(ref, this.#options.auth, this.#options, { ...ctx, factory: 'createRegistryImageBuilder' });
    const result = { ref: target, ...(this.#options.auth ? { auth: this.#options.auth } : {}) };
    const there = await probeImage(ref, credential).catch(() => undefined);
    if (there?.ok) {
      request.onProgress({ context: request.build.context, line: `${target} is already in the registry` });
      return result;
    }
    const local = await this.#builder.ensure({
      ...ctx,
      build: request.build,
      signal: request.signal,
      onProgress: request.onProgress,
      onBuilding: () => request.onBuilding?.(),
    });
    let push = this.#pushing.get(target);
    if (!push) {
      push = this.#push(local, target, credential, ctx).finally(() => this.#pushing.delete(target));
      push.catch(() => undefined);
      this.#pushing.set(target, push);
    }
    request.onProgress({ context: request.build.context, line: `pushing ${target}` });
    await raceAbort(push, request.signal);
    return result;
  }

  async #push(
    local: string,
    target: string,
    credential: PullCredential | undefined,
    ctx: { operation: 'build'; backend: string; environmentId?: string },
  ): Promise<void> {
    const [repo, tag] = [target.slice(0, target.lastIndexOf(':')), target.slice(target.lastIndexOf(':') + 1)];
    const registry = parseImageRef(target).registry;
    try {
      await this.#docker.getImage(local).tag({ repo, tag });
      const auth = dockerAuthConfig(credential);
      const stream = (await this.#docker.getImage(target).push(auth ? { authconfig: auth } : {})) as unknown as Readable;
      for await (const line of jsonLines(stream)) {
        const message = line as { error?: string; errorDetail?: { message?: string } };
        const error = message.errorDetail?.message ?? message.error;
        if (error) {
          stream.destroy();
          throw pushRefused(error, registry, ctx);
        }
      }
    } catch (error) {
      if (ConfigError.isInstance(error) || BackendUnavailableError.isInstance(error)) throw error;
      throw mapDaemonError(error, ctx) ?? pushRefused(dockerMessage(error), registry, ctx, error);
    } finally {
      // The pushed name is only a label for the push; the built image keeps its berth-build tag.
      await this.#docker
        .getImage(target)
        .remove({ noprune: true })
        .catch(() => undefined);
    }
  }
}

/** A refused push: credentials (permanent: the builder's configuration) or anything else (transient). */
function pushRefused(message: string, registry: string, ctx: { operation: 'build'; backend: string; environmentId?: string }, cause?: unknown): Error {
  // Docker says "missing X-Registry-Auth" when it was given no credentials at all for the push.
  if (/unauthorized|denied|authentication required|forbidden|no basic auth|missing X-Registry-Auth/i.test(message)) {
    return new ConfigError({
      ...ctx,
      path: 'builder.auth',
      message: `${registry} refused the push of the built image (${message}): give createRegistryImageBuilder credentials that may push there`,
      cause,
    });
  }
  // Anything else (the registry down, a reset, a 5xx) may pass: the next attempt pushes again.
  return new BackendUnavailableError({ ...ctx, message: `the push of the built image to ${registry} failed: ${message}`, cause });
}

/** A builder for backends that pull (Kubernetes): build with the local Docker engine, push to `repository`. */
export function createRegistryImageBuilder(options: RegistryImageBuilderOptions): RegistryImageBuilder {
  return new RegistryImageBuilder(options);
}
