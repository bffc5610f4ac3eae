import type Docker from 'dockerode';
import type { MirroredImage, PreflightCheck } from '@berth/core';
import { notPresentNeverPull, preflightFailure, pullFailure, resolvePullCredential } from '@berth/core/backend-kit';
import { CREDENTIALS_HINT, dockerMessage, mapDaemonError, statusOf } from './docker-errors.js';
import type { DockerBackendOptions } from './options.js';
import { dockerAuthConfig, imagePresent } from './pull.js';
import { BACKEND } from './sandbox.js';

/** Is the image present, or pullable with the credentials start() would use, without pulling it? */
export async function checkImage(docker: Docker, options: DockerBackendOptions, pull: MirroredImage): Promise<PreflightCheck> {
  const { image } = pull;
  const ctx = { operation: 'preflight' as const, backend: BACKEND };
  const policy = options.pullPolicy ?? 'if-missing';
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
    auth = dockerAuthConfig(await resolvePullCredential(image, pull.auth, options, { ...ctx, factory: 'createDockerBackend' }));
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
