import type { PreflightCheck } from '../contract.js';
import type { ImageRef } from '../image-ref.js';
import { preflightFailure } from './backend-helpers.js';
import { pullFailure } from './pull-failure.js';
import type { PullCredential } from './registry-auth.js';
import { probeImage } from './registry-probe.js';

export interface ImageCheckContext {
  backend: string;
  /** options.probeRegistries: the registries berth may ask; unset, every one. */
  probeRegistries?: readonly string[] | undefined;
  /** Whether the pull will carry credentials (default: a credential is given). */
  hadCredentials?: boolean;
}

/**
 * Preflight's image check for backends that cannot ask an engine (the registry is asked directly,
 * nothing is pulled), in one wording on every backend: pullable with the given credentials /
 * anonymously, not checked (and why), or the pull failure it would be.
 */
export async function imageCheck(ref: ImageRef, credential: PullCredential | undefined, ctx: ImageCheckContext): Promise<PreflightCheck> {
  if (ctx.probeRegistries && !ctx.probeRegistries.includes(ref.registry)) {
    return {
      name: 'image',
      status: 'warn',
      message: `${ref.registry} is not among options.probeRegistries: whether ${ref.original} is pullable was not checked`,
    };
  }
  const hadCredentials = ctx.hadCredentials ?? credential !== undefined;
  let probe;
  try {
    probe = await probeImage(ref, credential);
  } catch (error) {
    // A registry this machine cannot ask (a network path only the cluster has, a malformed challenge) is not a verdict.
    return {
      name: 'image',
      status: 'warn',
      message: `the registry of ${ref.original} could not be asked from here (${error instanceof Error ? error.message : String(error)})`,
    };
  }
  if (probe.ok)
    return { name: 'image', status: 'ok', message: `${ref.original} is pullable${hadCredentials ? ' with the given credentials' : ' anonymously'}` };
  const failure = pullFailure(probe.message, {
    operation: 'preflight',
    backend: ctx.backend,
    image: ref.original,
    hadCredentials,
    ...(probe.retryAfterMs !== undefined ? { retryAfterMs: probe.retryAfterMs } : {}),
  });
  return preflightFailure('image', failure);
}
