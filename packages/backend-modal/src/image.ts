import { CapabilityError, ConfigError, parseImageRef, remedied, type ImageAuth, type ImageBuild, type ImageRef, type MirrorRule } from '@berth/core';
import { pullFailure, registerSecret, resolvePull, resolvePullCredential, type PullCredential } from '@berth/core/backend-kit';
import { uploadContext } from './context-mount.js';
import { BACKEND, IDENTITY } from './credentials.js';
import type { ControlPlane, GenericResult, RegistryAuthType } from './wire/index.js';
import type { ModalBackendOptions } from './options.js';

/** How Modal is told to pull an image: the reference, and the registry config the seed was missing. */
export interface ImagePlan {
  ref: ImageRef;
  authType: RegistryAuthType;
  /** A named Modal secret, with the keys it must hold for this registry. */
  named?: { name: string; requiredKeys: readonly string[] };
  /** Credentials given in the spec (or found in Docker's config), sent as an ephemeral secret. */
  inline?: Record<string, string>;
  /** What berth itself can use to ask the registry whether the image is pullable. */
  probeWith?: PullCredential;
  /** Whether any credentials go with the pull (for messages). */
  hadCredentials: boolean;
}

const STATIC_KEYS = ['REGISTRY_USERNAME', 'REGISTRY_PASSWORD'];
const AWS_KEYS = ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_REGION'];
const GCP_KEYS = ['SERVICE_ACCOUNT_JSON'];

function isGcp(ref: ImageRef): boolean {
  return /(^|\.)gcr\.io$|-docker\.pkg\.dev$/.test(ref.registry);
}

/**
 * Static credentials from the spec become an ephemeral secret (STATIC_CREDS); `{ secretName }`
 * names a Modal secret whose keys say how to log in (AWS for ECR, GCP for Artifact Registry and
 * gcr.io, static otherwise); `{ aws }` keys are handed to Modal, which logs in to ECR itself.
 * Without auth, Docker's config is asked for the registry, then the pull is anonymous (PUBLIC).
 */
export async function planImage(
  refText: string,
  auth: ImageAuth | undefined,
  options: ModalBackendOptions & { mirrors?: readonly MirrorRule[] },
  environmentId?: string,
): Promise<ImagePlan> {
  const ctx = { operation: 'pull' as const, backend: BACKEND, ...(environmentId ? { environmentId } : {}) };
  // A { secretName } names a Modal secret, and Modal logs in to ECR itself: neither is berth's to resolve.
  const pull = resolvePull({ ref: refText, ...(auth ? { auth } : {}) }, options, { ...IDENTITY, ...ctx, engineAuth: ['secretName', 'aws'] });
  const ref = pull.image;
  const given: ImageAuth | undefined = pull.secretName !== undefined ? { secretName: pull.secretName } : pull.auth;
  if (given && 'secretName' in given) {
    const requiredKeys = ref.kind === 'ecr' ? AWS_KEYS : isGcp(ref) ? GCP_KEYS : STATIC_KEYS;
    const authType: RegistryAuthType =
      ref.kind === 'ecr' ? 'REGISTRY_AUTH_TYPE_AWS' : isGcp(ref) ? 'REGISTRY_AUTH_TYPE_GCP' : 'REGISTRY_AUTH_TYPE_STATIC_CREDS';
    return { ref, authType, named: { name: given.secretName, requiredKeys }, hadCredentials: true };
  }
  if (given && 'aws' in given) {
    const { accessKeyId, secretAccessKey, region, sessionToken } = given.aws;
    if (!accessKeyId || !secretAccessKey) {
      throw new ConfigError({
        ...ctx,
        path: 'spec.image.auth.aws',
        message:
          'Modal logs in to ECR itself: give aws.accessKeyId and aws.secretAccessKey (and aws.region), or name a Modal secret holding AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_REGION with { secretName }',
      });
    }
    registerSecret(secretAccessKey);
    const inline = {
      AWS_ACCESS_KEY_ID: accessKeyId,
      AWS_SECRET_ACCESS_KEY: secretAccessKey,
      AWS_REGION: region ?? ref.ecr?.region ?? '',
      ...(sessionToken ? { AWS_SESSION_TOKEN: sessionToken } : {}),
    };
    return { ref, authType: 'REGISTRY_AUTH_TYPE_AWS', inline, hadCredentials: true };
  }
  if (given && 'identityToken' in given) {
    throw new CapabilityError({
      ...ctx,
      capability: 'imageAuth.identityToken',
      message: 'Modal pulls with a username and password, an AWS or a GCP secret, not an identity token: pass { username, password } or { secretName }',
    });
  }
  const credential = await resolvePullCredential(ref, given, options, { ...ctx, factory: IDENTITY.factory });
  if (credential && 'username' in credential) {
    return {
      ref,
      authType: 'REGISTRY_AUTH_TYPE_STATIC_CREDS',
      inline: { REGISTRY_USERNAME: credential.username, REGISTRY_PASSWORD: credential.password },
      probeWith: credential,
      hadCredentials: true,
    };
  }
  return { ref, authType: 'REGISTRY_AUTH_TYPE_PUBLIC', hadCredentials: false };
}

/** A snapshot's plan: nothing is pulled, the reference only names it in messages. */
export function snapshotPlan(refText: string): ImagePlan {
  return { ref: parseImageRef(refText), authType: 'REGISTRY_AUTH_TYPE_PUBLIC', hadCredentials: false };
}

/** A Dockerfile's commands for Modal's builder, and how its failure reads in berth's terms. */
export interface BuildRecipe {
  commands: string[];
  buildArgs?: Record<string, string>;
  /** The Dockerfile's build context, uploaded as a mount for COPY and ADD; `hash` names its content. */
  context?: { build: ImageBuild; hash: string };
  failure: (result: GenericResult, lines: readonly string[]) => Error;
}

/** Images built per backend instance: one build per reference and credentials, shared by every start. */
export class ImageBuilds {
  readonly #control: ControlPlane;
  readonly #builds = new Map<string, Promise<string>>();

  constructor(control: ControlPlane) {
    this.#control = control;
  }

  /**
   * The image id once Modal has it, awaiting the build (its log lines go to `onLog`). `recipe` is
   * a Dockerfile's commands (FROM first) and how a failure reads; default: `FROM <ref>` alone.
   */
  ensure(
    plan: ImagePlan,
    appId: string,
    environmentName: string | undefined,
    onLog: (line: string) => void,
    signal: AbortSignal,
    recipe?: BuildRecipe,
  ): Promise<string> {
    const commands = recipe?.commands ?? [`FROM ${plan.ref.canonical}`];
    const key = JSON.stringify([commands, plan.authType, plan.named?.name ?? '', plan.inline ?? {}, recipe?.buildArgs ?? {}, recipe?.context?.hash ?? '']);
    let build = this.#builds.get(key);
    if (!build) {
      build = this.#build(plan, commands, recipe, appId, environmentName, onLog, signal);
      // A failed build is not cached: the next start asks again (the registry may be back).
      build.catch(() => this.#builds.delete(key));
      this.#builds.set(key, build);
    }
    return build;
  }

  async #build(
    plan: ImagePlan,
    commands: string[],
    recipe: BuildRecipe | undefined,
    appId: string,
    environmentName: string | undefined,
    onLog: (line: string) => void,
    signal: AbortSignal,
  ): Promise<string> {
    const secretId = plan.named
      ? await this.#control.namedSecret(plan.named.name, plan.named.requiredKeys, environmentName, signal)
      : plan.inline
        ? await this.#control.ephemeralSecret(appId, plan.inline, environmentName, signal)
        : undefined;
    const registry = { authType: plan.authType, ...(secretId ? { secretId } : {}) };
    const contextMountId = recipe?.context ? await uploadContext(this.#control, appId, recipe.context.build, signal) : undefined;
    const { imageId, result } = await this.#control.imageGetOrCreate(appId, commands, registry, signal, recipe?.buildArgs, contextMountId);
    let outcome = result;
    let lastEntryId: string | undefined;
    const lines: string[] = [];
    while (!outcome) {
      for await (const update of this.#control.imageJoin(imageId, lastEntryId, signal)) {
        for (const line of update.logs.flatMap((l) => l.split('\n')).filter((l) => l.trim())) {
          lines.push(line);
          if (lines.length > 200) lines.splice(0, 100);
          onLog(line);
        }
        lastEntryId = update.entryId ?? lastEntryId;
        if (update.result) outcome = update.result;
      }
    }
    if (outcome.status !== 'GENERIC_STATUS_SUCCESS') throw recipe ? recipe.failure(outcome, lines) : imageFailure(plan, outcome, lines);
    return imageId;
  }
}

/** How a Modal user passes registry credentials, for pull errors. */
export const CREDENTIALS_HINT = remedied('image-auth-modal-secret', 'pass spec.image.auth ({ username, password } or { secretName } of a Modal secret)');

/** A failed image build in berth's terms: the registry's words (exception and log) decide the reason. */
export function imageFailure(plan: ImagePlan, result: GenericResult, lines: readonly string[]): Error {
  const exception = result.exception?.trim() ?? '';
  const message = [exception, ...lines.slice(-20)].filter(Boolean).join('\n') || `the image build ended with ${String(result.status)}`;
  return pullFailure(message, {
    operation: 'pull',
    backend: BACKEND,
    image: plan.ref.original,
    hadCredentials: plan.hadCredentials,
    credentialsHint: CREDENTIALS_HINT,
  });
}
