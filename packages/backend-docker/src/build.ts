import type { Readable } from 'node:stream';
import type Docker from 'dockerode';
import { DEFAULT_BUILD_TIMEOUT_MS, parseImageRef, type BuildProgress, type ImageBuild } from '@berth/core';
import {
  LABEL_MANAGED,
  baseImages,
  buildFailure,
  buildTag,
  buildTimedOut,
  hashBuildContext,
  logTail,
  packBuildContext,
  raceAbort,
  readDockerfile,
  resolvePullCredential,
} from '@berth/core/backend-kit';
import { CREDENTIALS_HINT, dockerMessage, mapDaemonError, type ErrorContext } from './docker-errors.js';
import type { DockerBackendOptions } from './options.js';
import { dockerAuthConfig, imagePresent, jsonLines, type DockerAuthConfig } from './pull.js';
import { IDENTITY } from './identity.js';

/** Every image berth builds carries this label (with the content hash), so it can be listed and pruned. */
export const LABEL_BUILD = 'berth.build';

interface BuildLine {
  stream?: string;
  status?: string;
  error?: string;
  errorDetail?: { message?: string };
}

/** The legacy builder names each step 'Step 2/5 : RUN make'; a FROM step pulls the base image. */
const STEP = /^Step \d+\/\d+ : (.*)$/;
const STEP_NUMBERS = /^Step (\d+)\/(\d+) : (.*)$/;

/** berth's labels on a built image (for sweep). The legacy builder adds one LABEL step per label. */
const BUILD_LABELS = (tag: string): Record<string, string> => ({ [LABEL_MANAGED]: 'true', [LABEL_BUILD]: tag.split(':')[1]! });

/**
 * A builder's line as the Dockerfile's author would count: the steps the builder appended for
 * berth's labels taken out of the total, and those steps themselves (undefined) not said at all
 * ("Step 2/4" for a two-line Dockerfile read like two lines were missing).
 */
export function ownStep(line: string, appended: number): string | undefined {
  const m = STEP_NUMBERS.exec(line);
  if (!m) return line;
  const total = Number(m[2]) - appended;
  if (Number(m[1]) > total) return undefined;
  return `Step ${m[1]}/${total} : ${m[3]}`;
}
const FROM_STEP = /^FROM\s+(?:--\S+\s+)*(\S+)/i;

export interface BuildRequest extends ErrorContext {
  build: ImageBuild;
  signal: AbortSignal;
  onProgress: (progress: BuildProgress) => void;
  /** Called when a build is really needed (not when the tag is already there). */
  onBuilding: () => void;
}

/**
 * Builds `image: { build }` specs through the engine's build API, tagged by content hash: an
 * unchanged context is built once per machine (the tag is there next time), and concurrent starts
 * of the same task in this process share one build.
 */
export class DockerImageBuilder {
  readonly #docker: Docker;
  readonly #options: DockerBackendOptions;
  readonly #running = new Map<string, Promise<void>>();

  constructor(docker: Docker, options: DockerBackendOptions) {
    this.#docker = docker;
    this.#options = options;
  }

  /** The tag of the built image, building it if this content was never built here. */
  async ensure(request: BuildRequest): Promise<string> {
    const dockerfile = await readDockerfile(request.build, request);
    const tag = buildTag(await hashBuildContext(request.build));
    const ref = parseImageRef(tag);
    if (await imagePresent(this.#docker, ref, request)) return tag;
    request.onBuilding();
    let shared = this.#running.get(tag);
    if (!shared) {
      // The build belongs to every start waiting on it: only its own timeout stops it.
      shared = this.#build(request, tag, dockerfile).finally(() => this.#running.delete(tag));
      shared.catch(() => undefined); // each waiter hears of a failure through its own await
      this.#running.set(tag, shared);
    } else {
      request.onProgress({ context: request.build.context, line: `waiting for a build of the same context (${tag})` });
    }
    await raceAbort(shared, request.signal);
    return tag;
  }

  /**
   * Credentials for the base images, found where a pull of them would find them (Docker config,
   * registry secrets): the build sends them as X-Registry-Config.
   */
  async #registryConfig(request: BuildRequest, dockerfile: string): Promise<Record<string, DockerAuthConfig>> {
    const config: Record<string, DockerAuthConfig> = {};
    for (const base of baseImages(dockerfile, request.build.args)) {
      const credential = await resolvePullCredential(parseImageRef(base), undefined, this.#options, { ...request, factory: IDENTITY.factory });
      const auth = dockerAuthConfig(credential);
      if (auth) config[auth.serveraddress] = auth;
    }
    return config;
  }

  async #build(request: BuildRequest, tag: string, dockerfile: string): Promise<void> {
    const { build } = request;
    const registryconfig = await this.#registryConfig(request, dockerfile);
    const timeoutMs = build.timeoutMs ?? DEFAULT_BUILD_TIMEOUT_MS;
    const deadline = AbortSignal.timeout(timeoutMs);
    const lines: string[] = [];
    let step: string | undefined;
    const fail = (message: string, cause?: unknown) => {
      const from = step && FROM_STEP.exec(STEP.exec(step)?.[1] ?? '');
      return buildFailure(message, {
        ...request,
        ...(step ? { step } : {}),
        logTail: logTail(lines),
        ...(from ? { baseImage: from[1]! } : {}),
        credentialsHint: CREDENTIALS_HINT,
        cause,
      });
    };
    const packed = packBuildContext(build);
    packed.done.catch(() => undefined);
    try {
      const stream = (await this.#docker.buildImage(packed.stream as unknown as NodeJS.ReadableStream, {
        t: tag,
        dockerfile: build.dockerfile,
        buildargs: build.args,
        ...(build.target ? { target: build.target } : {}),
        labels: BUILD_LABELS(tag),
        ...(build.network === 'none' ? { networkmode: 'none' } : {}),
        ...(Object.keys(registryconfig).length ? { registryconfig: registryconfig as Docker.RegistryConfig } : {}),
        rm: true,
        forcerm: true,
        abortSignal: deadline,
      })) as unknown as Readable;
      for await (const line of jsonLines(stream)) {
        const message = line as BuildLine;
        const error = message.errorDetail?.message ?? message.error;
        if (error) {
          stream.destroy();
          throw fail(error);
        }
        const text = (message.stream ?? message.status ?? '').trimEnd();
        if (!text) continue;
        for (const raw of text.split('\n')) {
          const one = ownStep(raw, Object.keys(BUILD_LABELS(tag)).length);
          // berth's own LABEL steps are not the Dockerfile's: not said, not counted.
          if (one === undefined) continue;
          const at = STEP.exec(one);
          if (at) step = one;
          lines.push(one);
          if (lines.length > 200) lines.splice(0, lines.length - 100);
          request.onProgress({ context: build.context, line: one, ...(step ? { step } : {}) });
        }
      }
      await packed.done;
    } catch (error) {
      if (deadline.aborted) throw buildTimedOut({ ...request, ...(step ? { step } : {}), logTail: logTail(lines), timeoutMs });
      const daemon = mapDaemonError(error, { ...request, operation: 'build' });
      if (daemon) throw daemon;
      throw fail(dockerMessage(error), error);
    }
    if (!(await imagePresent(this.#docker, parseImageRef(tag), request))) throw fail('the build ended without the image being tagged');
  }
}
