import type Docker from 'dockerode';
import { ImagePullError, parseImageRef, type ImageRef } from '@berth/core';
import { notPresentNeverPull, resolvePullCredential, type CreateContext, type ResolvedPull } from '@berth/core/backend-kit';
import type { ImageBuild } from '@berth/core';
import type { DockerImageBuilder } from './build.js';
import type { DockerBackendOptions } from './options.js';
import { dockerAuthConfig, imagePresent, pullImage } from './pull.js';
import { BACKEND, IDENTITY } from './identity.js';

/** Where a sandbox's (or a service's) image comes from: a pull (resolvePull's) or a build. */
export type DockerImageSource = ({ kind: 'pull' } & ResolvedPull) | { kind: 'build'; build: ImageBuild; builder: DockerImageBuilder };

/**
 * An image made present on the engine: pulled as the pull policy says, with its own credentials
 * (the sandbox's image, an image mount's, a service's), or built. `what` names whose image it is
 * in the status lines ('' for the sandbox's own). Returns what a container runs.
 */
export async function supplyImage(
  docker: Docker,
  options: DockerBackendOptions,
  source: DockerImageSource,
  environmentId: string,
  ctx: Pick<CreateContext, 'progress' | 'signal'>,
  what = '',
): Promise<ImageRef> {
  const errorCtx = (operation: 'pull' | 'build') => ({ operation, backend: BACKEND, environmentId });
  if (source.kind === 'build') {
    const tag = await source.builder.ensure({
      ...errorCtx('build'),
      build: source.build,
      signal: ctx.signal,
      onBuilding: () => ctx.progress({ phase: 'building', status: `building ${what || 'the image'} from ${source.build.context}` }),
      onProgress: (build) => ctx.progress({ build, status: build.step ?? build.line }),
    });
    return parseImageRef(tag);
  }
  await ensurePulled(docker, options, source, environmentId, ctx, what);
  return source.image;
}

/** Pull an image as the pull policy says, with its own credentials. */
export async function ensurePulled(
  docker: Docker,
  options: DockerBackendOptions,
  { image, auth, policy }: ResolvedPull,
  environmentId: string,
  ctx: Pick<CreateContext, 'progress' | 'signal'>,
  what = '',
): Promise<void> {
  const errorCtx = { operation: 'pull' as const, backend: BACKEND, environmentId };
  if (policy !== 'always' && (await imagePresent(docker, image, errorCtx))) return;
  if (policy === 'never') throw notPresentNeverPull(image.original, errorCtx);
  const pulling = `pulling ${what ? `${what}'s image ` : ''}${image.original}`;
  ctx.progress({ phase: 'pulling', status: pulling });
  const credential = await resolvePullCredential(image, auth, options, { ...errorCtx, factory: IDENTITY.factory });
  await pullImage(docker, image, dockerAuthConfig(credential), {
    ...errorCtx,
    signal: ctx.signal,
    onProgress: (p) => {
      const share = p.total ? `: ${p.status} ${Math.round(((p.current ?? 0) / p.total) * 100)}%` : '';
      ctx.progress({ pull: p, ...(share ? { status: `${pulling}${share}` } : {}) });
    },
  });
  // A pull cut short by the daemon can "finish" without the image: check.
  if (!(await imagePresent(docker, image, errorCtx))) {
    throw new ImagePullError({
      ...errorCtx,
      image: image.original,
      reason: 'transient',
      message: `pull of ${image.original} ended without the image being present`,
    });
  }
}
