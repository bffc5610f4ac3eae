import type { EnvironmentSpec, PulledImageInput } from '@berth/core';
import { resolvePull, resolvePullCredential, type ResolvedPull } from '@berth/core/backend-kit';
import { IDENTITY } from './cluster.js';
import type { K8sBackendOptions } from './options.js';
import type { PodImageMount } from './pod-manifest.js';
import type { PullSecrets } from './pull-secrets.js';

/** Every image of one pod: the task's own and its image mounts', and the pull secrets they name. */
export interface PodImages {
  /** Unset until built, for `image: { build }` (options.builder builds it at start). */
  main?: ResolvedPull;
  mounts: ReadonlyArray<ResolvedPull & { subpath?: string; target: string }>;
  /** spec.services' images, by service: pulled ones from the start, built ones once the builder pushed them. */
  services: ReadonlyMap<string, ResolvedPull>;
  /** Pull secrets of the namespace the pod names: the options' and every `{ secretName }`. */
  pullSecrets: readonly string[];
  secrets: PullSecrets;
}

/**
 * Read the spec's images: `{ secretName }` names a pull secret of the namespace as is, other
 * credentials become a Secret at start. Mirrors are applied to each. Bad credentials are a
 * ConfigError here, before any I/O.
 */
export function podImages(spec: EnvironmentSpec, main: PulledImageInput | undefined, options: K8sBackendOptions, secrets: PullSecrets): PodImages {
  const named = new Set(options.imagePullSecrets ?? []);
  const mounts = spec.mounts.flatMap((m) =>
    m.type === 'image' ? [{ ...source(m.image, options, named), ...(m.subpath !== undefined ? { subpath: m.subpath } : {}), target: m.target }] : [],
  );
  const services = new Map<string, ResolvedPull>();
  for (const [name, service] of Object.entries(spec.services)) {
    const image = service.image;
    if (!('build' in image)) services.set(name, source(image, options, named));
  }
  return { ...(main ? { main: source(main, options, named) } : {}), mounts, services, pullSecrets: [...named], secrets };
}

/** The images once a service's own is known (built and pushed at start). */
export function withService(images: PodImages, name: string, image: PulledImageInput, options: K8sBackendOptions): PodImages {
  const named = new Set(images.pullSecrets);
  const services = new Map(images.services);
  services.set(name, source(image, options, named));
  return { ...images, services, pullSecrets: [...named] };
}

/** The images once the task's own is known (an image the builder just built and pushed). */
export function withMain(images: PodImages, main: PulledImageInput, options: K8sBackendOptions): PodImages {
  const named = new Set(images.pullSecrets);
  return { ...images, main: source(main, options, named), pullSecrets: [...named] };
}

/** One image the pod pulls (mirrors applied), with the credentials to make into a Secret, if any. */
function source(image: PulledImageInput, options: K8sBackendOptions, named: Set<string>): ResolvedPull {
  // A { secretName } is a pull secret of the namespace, named on the pod as is.
  const pull = resolvePull(image, options, { ...IDENTITY, operation: 'config', engineAuth: ['secretName'] });
  if (pull.secretName !== undefined) named.add(pull.secretName);
  return pull;
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
  for (const { image, auth } of [...(images.main ? [images.main] : []), ...images.mounts, ...images.services.values()]) {
    if (auth === undefined && images.pullSecrets.length > 0) continue;
    const credential = await resolvePullCredential(image, auth, options, { ...IDENTITY, operation: 'pull', environmentId });
    if (!credential) continue;
    // Acquiring the same Secret again for the same environment is a no-op: one release frees it.
    const name = await images.secrets.acquire(credential, environmentId);
    if (!acquired.includes(name)) acquired.push(name);
  }
  return acquired;
}
