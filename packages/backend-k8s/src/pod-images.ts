import type { EnvironmentSpec, ImageAuth, ImageRef, PulledImageInput } from '@berth/core';
import { checkPullAuth, mirrorImage, resolvePullCredential } from '@berth/core/backend-kit';
import { BACKEND } from './cluster.js';
import type { K8sBackendOptions } from './options.js';
import type { PodImageMount } from './pod-manifest.js';
import type { PullSecrets } from './pull-secrets.js';

/** One image the pod pulls (mirrors applied), with the credentials to make into a Secret, if any. */
export interface PulledSource {
  image: ImageRef;
  auth?: ImageAuth;
}

/** Every image of one pod: the task's own and its image mounts', and the pull secrets they name. */
export interface PodImages {
  /** Unset until built, for `image: { build }` (options.builder builds it at start). */
  main?: PulledSource;
  mounts: ReadonlyArray<PulledSource & { subpath?: string; target: string }>;
  /** Pull secrets of the namespace the pod names: the options' and every `{ secretName }`. */
  pullSecrets: readonly string[];
  secrets: PullSecrets;
}

/**
 * Read the spec's images: `{ secretName }` names a pull secret of the namespace as is, other
 * credentials become a Secret at start. Mirrors are applied to each. Bad credentials are a
 * ConfigError here, before any I/O.
 */
export function podImages(
  spec: EnvironmentSpec,
  main: { ref: string; auth?: ImageAuth } | undefined,
  options: K8sBackendOptions,
  secrets: PullSecrets,
): PodImages {
  const named = new Set(options.imagePullSecrets ?? []);
  const mounts = spec.mounts.flatMap((m) =>
    m.type === 'image' ? [{ ...source(pulled(m.image), options, named), ...(m.subpath !== undefined ? { subpath: m.subpath } : {}), target: m.target }] : [],
  );
  return { ...(main ? { main: source(main, options, named) } : {}), mounts, pullSecrets: [...named], secrets };
}

/** The images once the task's own is known (an image the builder just built and pushed). */
export function withMain(images: PodImages, main: { ref: string; auth?: ImageAuth }, options: K8sBackendOptions): PodImages {
  const named = new Set(images.pullSecrets);
  return { ...images, main: source(main, options, named), pullSecrets: [...named] };
}

function source(image: { ref: string; auth?: ImageAuth }, options: K8sBackendOptions, named: Set<string>): PulledSource {
  const secretName = image.auth && 'secretName' in image.auth ? image.auth.secretName : undefined;
  if (secretName !== undefined) named.add(secretName);
  const auth = secretName === undefined ? image.auth : undefined;
  checkPullAuth(auth, options, { backend: BACKEND, operation: 'config', factory: 'createK8sBackend' });
  const pull = mirrorImage(image.ref, auth, options.mirrors ?? []);
  return { image: pull.image, ...(pull.auth ? { auth: pull.auth } : {}) };
}

function pulled(image: PulledImageInput): { ref: string; auth?: ImageAuth } {
  return typeof image === 'string' ? { ref: image } : image;
}

/** The image mounts as the manifest takes them. */
export function manifestMounts(images: PodImages): PodImageMount[] {
  return images.mounts.map((m) => ({ image: m.image.canonical, ...(m.subpath !== undefined ? { subpath: m.subpath } : {}), target: m.target }));
}

/**
 * The Secrets this pod needs for its images' credentials (the spec's, or Docker config's for a
 * registry when no pull secret is named), acquired for `environmentId`. Images sharing a
 * credential share its Secret.
 */
export async function acquirePullSecrets(images: PodImages, environmentId: string, options: K8sBackendOptions): Promise<string[]> {
  const acquired: string[] = [];
  for (const { image, auth } of [...(images.main ? [images.main] : []), ...images.mounts]) {
    if (auth === undefined && images.pullSecrets.length > 0) continue;
    const credential = await resolvePullCredential(image, auth, options, { operation: 'pull', backend: BACKEND, environmentId, factory: 'createK8sBackend' });
    if (!credential) continue;
    // Acquiring the same Secret again for the same environment is a no-op: one release frees it.
    const name = await images.secrets.acquire(credential, environmentId);
    if (!acquired.includes(name)) acquired.push(name);
  }
  return acquired;
}
