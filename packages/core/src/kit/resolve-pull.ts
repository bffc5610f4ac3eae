import type { Operation } from '../errors.js';
import { mirrorImage, type MirroredImage, type MirrorRule } from '../image-ref.js';
import type { PulledImageInput } from '../spec.js';
import type { PullPolicyOption } from './common-options.js';
import { checkPullAuth, type PullCredentialSources } from './registry-auth.js';
import { isSnapshotHost } from './snapshot-ref.js';

/**
 * A backend as its errors name it: `backend` in every error, `factory` in messages that say how to
 * configure it (e.g. `{ backend: 'docker', factory: 'createDockerBackend' }`). Declared once per
 * backend and spread where the kit asks for both (resolvePull, checkFactoryOptions, defaultLifetimeMs).
 */
export interface BackendIdentity {
  backend: string;
  factory: string;
}

export type PullPolicy = NonNullable<PullPolicyOption['pullPolicy']>;

/** What a backend's options give a pull: its mirror rules, its pull policy, where credentials come from. */
export interface PullSources extends PullCredentialSources, PullPolicyOption {
  mirrors?: readonly MirrorRule[];
}

export interface ResolvePullContext extends BackendIdentity {
  operation: Operation;
  environmentId?: string;
  /**
   * Spec auth the backend's engine resolves itself, so it is not checked against the sources:
   * `secretName` names the engine's own secret (a namespace's pull secret, a Modal secret) and is
   * returned as `secretName`, never handed to a mirror; `aws` is an ECR login the engine does itself.
   */
  engineAuth?: readonly ('secretName' | 'aws')[];
}

/** An image as it will be pulled. */
export interface ResolvedPull extends MirroredImage {
  /** The pull policy, 'if-missing' when the options set none. */
  policy: PullPolicy;
  /** The spec's `{ secretName }`, when the engine resolves it (engineAuth): whatever mirror applied. */
  secretName?: string;
}

/**
 * The one way a backend reads an image it pulls, before any I/O: auth the sources cannot resolve
 * is refused (ConfigError for a `secretName` nobody defined, naming ctx.factory; CapabilityError
 * for `aws` without an ecrLogin), the mirror rules are applied (each registry gets only its own
 * credentials), and the pull policy defaulted.
 */
export function resolvePull(input: PulledImageInput, sources: PullSources, ctx: ResolvePullContext): ResolvedPull {
  const { ref, auth: written } = typeof input === 'string' ? { ref: input, auth: undefined } : input;
  const engine = ctx.engineAuth ?? [];
  const secretName = written && 'secretName' in written && engine.includes('secretName') ? written.secretName : undefined;
  const auth = secretName === undefined ? written : undefined;
  if (!(auth && 'aws' in auth && engine.includes('aws'))) checkPullAuth(auth, sources, ctx);
  const pull = mirrorImage(ref, auth, sources.mirrors ?? []);
  // A snapshot lives only where it was made: never pulled, whatever the policy (a removed one is not found, not fetched).
  const policy = isSnapshotHost(ref) ? 'never' : (sources.pullPolicy ?? 'if-missing');
  return { ...pull, policy, ...(secretName !== undefined ? { secretName } : {}) };
}
