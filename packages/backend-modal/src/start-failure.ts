// Why a Modal sandbox ended before it ran, in berth's errors: a container Modal could not load is
// asked of its registry (pullable or not), a failure right after starting is the image's (no
// /bin/sh), and anything else happened to the sandbox (lost). Apart from sandbox.ts, whose job is
// the sandbox's life, not the reading of its end.
import { ConfigError, SandboxLostError, type ImageRef, type Operation } from '@berth/core';
import { probeImage, pullFailure } from '@berth/core/backend-kit';
import { CREDENTIALS_HINT, type ImagePlan } from './image.js';
import { endReason } from './sandbox-result.js';
import type { GenericResult } from './wire/index.js';

/** How a container that could not be loaded reads ("FetchSpec failed: loading container: file does not exist"). */
const CONTAINER_NOT_LOADED = /FetchSpec failed|loading container|failed to (pull|load) image|image.*not found/i;

/** Where the start failed (the error's base fields) and whether berth may ask the image's registry. */
export interface StartFailureContext {
  base: { operation: Operation; backend: string; environmentId: string };
  mayProbe: (ref: ImageRef) => boolean;
}

/**
 * The sandbox ended before it ran. A container that could not be loaded is not guessed at: the
 * registry is asked whether the image is pullable with the credentials the spec gave. Not
 * pullable is the ImagePullError it is (seed 004: one clear error, not 102 mysterious ones);
 * pullable means Modal's infrastructure failed, which is transient.
 */
export async function startFailure(result: GenericResult, plan: ImagePlan, at: StartFailureContext): Promise<Error> {
  const text = result.exception?.trim() || String(result.status);
  if (CONTAINER_NOT_LOADED.test(text)) {
    // A named Modal secret's credentials are not berth's to see: the registry cannot be asked with them.
    const probe = !plan.named && at.mayProbe(plan.ref) ? await probeImage(plan.ref, plan.probeWith).catch(() => undefined) : undefined;
    if (probe && !probe.ok) {
      return pullFailure(probe.message, {
        ...at.base,
        operation: 'pull',
        image: plan.ref.original,
        hadCredentials: plan.hadCredentials,
        retryAfterMs: probe.retryAfterMs,
        credentialsHint: CREDENTIALS_HINT,
        cause: new Error(text),
      });
    }
    const why = probe?.ok
      ? 'the image is pullable with the credentials given, so Modal failed to load the container'
      : 'whether the image is pullable could not be asked';
    return new SandboxLostError({
      ...at.base,
      message: `the sandbox's container could not be loaded (${text}); ${why}`,
      lastState: String(result.status),
    });
  }
  if (result.status === 'GENERIC_STATUS_FAILURE') {
    return new ConfigError({
      ...at.base,
      path: 'spec.image',
      message: `the sandbox ended right after starting (${text}, exit ${result.exitcode ?? '?'}): berth needs /bin/sh in the image`,
    });
  }
  // Anything else (TERMINATED, an eviction, a kernel OOM kill...) happened to the sandbox, not
  // because of the spec: lost, in the words inspect() uses for the same end.
  const reason = endReason(result);
  return new SandboxLostError({ ...at.base, message: `the sandbox ended before it ran: ${reason}`, lastState: reason });
}
