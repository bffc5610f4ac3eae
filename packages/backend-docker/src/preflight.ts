import type Docker from 'dockerode';
import { parseImageRef, type ImageBuild, type PreflightCheck } from '@berth/core';
import {
  baseImages,
  buildTag,
  hashBuildContext,
  notPresentNeverPull,
  preflightFailure,
  pullFailure,
  readDockerfile,
  resolvePull,
  resolvePullCredential,
  type ResolvedPull,
} from '@berth/core/backend-kit';
import { CREDENTIALS_HINT, dockerMessage, mapDaemonError, statusOf } from './docker-errors.js';
import type { DockerBackendOptions } from './options.js';
import { dockerAuthConfig, imagePresent } from './pull.js';
import { BACKEND, IDENTITY } from './identity.js';
import type { GpuSupport } from './gpu.js';

/** Is the image present, or pullable with the credentials start() would use, without pulling it? */
export async function checkImage(docker: Docker, options: DockerBackendOptions, pull: ResolvedPull): Promise<PreflightCheck> {
  const { image, policy } = pull;
  const ctx = { operation: 'preflight' as const, backend: BACKEND };
  let present: boolean;
  try {
    present = await imagePresent(docker, image, ctx);
  } catch (error) {
    return preflightFailure('image', error);
  }
  // The check follows the pull policy: what start() will do is what is checked.
  if (present && policy !== 'always') return { name: 'image', status: 'ok', message: `${image.original} is present locally` };
  if (!present && policy === 'never') return preflightFailure('image', notPresentNeverPull(image.original, ctx));
  let auth;
  try {
    auth = dockerAuthConfig(await resolvePullCredential(image, pull.auth, options, { ...ctx, factory: IDENTITY.factory }));
  } catch (error) {
    return preflightFailure('image', error);
  }
  try {
    // The engine's distribution endpoint asks the registry for the manifest: auth and existence
    // are checked, nothing is downloaded.
    await docker.getImage(image.canonical).distribution(auth ? { authconfig: auth } : {});
    return { name: 'image', status: 'ok', message: `${image.original} is pullable${auth ? ' with the given credentials' : ' anonymously'}` };
  } catch (error) {
    const mapped =
      (statusOf(error) === undefined ? mapDaemonError(error, ctx) : undefined) ??
      pullFailure(dockerMessage(error), { ...ctx, image: image.original, hadCredentials: auth !== undefined, credentialsHint: CREDENTIALS_HINT, cause: error });
    return preflightFailure('image', mapped);
  }
}

/**
 * For `image: { build }`: is the Dockerfile there, is the image already built (then nothing is
 * built or pulled), and can each base image be had (present, or pullable with the credentials the
 * build will send)?
 */
export async function checkBuild(docker: Docker, options: DockerBackendOptions, build: ImageBuild): Promise<PreflightCheck[]> {
  const ctx = { operation: 'preflight' as const, backend: BACKEND };
  let tag: string;
  let dockerfile: string;
  try {
    dockerfile = await readDockerfile(build, ctx);
    tag = buildTag(await hashBuildContext(build));
    if (await imagePresent(docker, parseImageRef(tag), ctx)) {
      return [{ name: 'image', status: 'ok', message: `the image of ${build.context} is already built (${tag}): it will not be built again` }];
    }
  } catch (error) {
    return [preflightFailure('image', error)];
  }
  const checks: PreflightCheck[] = [
    { name: 'image', status: 'ok', message: `the image will be built from ${build.context} (${build.dockerfile}) and tagged ${tag}` },
  ];
  for (const base of baseImages(dockerfile, build.args)) {
    let check: PreflightCheck;
    try {
      // The builder pulls a missing base image whatever the pull policy says, and without mirrors.
      check = await checkImage(docker, options, resolvePull(base, { pullPolicy: 'if-missing' }, { ...IDENTITY, operation: 'preflight' }));
    } catch (error) {
      check = preflightFailure('image', error);
    }
    checks.push({ ...check, name: `base image ${base}` });
  }
  return checks;
}

/** A spec asking for GPUs: does the engine have the NVIDIA runtime start() needs? */
export async function checkGpus(gpus: GpuSupport, count: number): Promise<PreflightCheck> {
  try {
    await gpus.require(count, { operation: 'preflight', backend: BACKEND });
  } catch (error) {
    return preflightFailure('gpus', error);
  }
  return { name: 'gpus', status: 'ok', message: `the engine has an NVIDIA runtime for ${count} GPU(s)` };
}
