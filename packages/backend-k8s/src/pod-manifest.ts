import type { V1Container, V1HostAlias, V1Pod, V1Probe, V1Volume, V1VolumeMount } from '@kubernetes/client-node';
import type { EnvironmentSpec } from '@berth/core';
import { DEFAULT_LIFETIME_MS, IMAGE_MOUNT_STAGING, imageMountCopyCommand, keepAliveCommand } from '@berth/core/backend-kit';
import type { K8sBackendOptions } from './options.js';
import { gpuAffinity } from './gpu-affinity.js';

/** The one container of a berth pod. */
export const CONTAINER = 'main';
/** The pod's volume of a sandbox's volume `name` (`{ type: 'volume' }` mounts) is `<prefix><name>`. */
export const VOLUME_PREFIX = 'berth-vol-';
/** The init container that waits, before the services start, for network 'none' to hold. */
export const NETWORK_WAIT = 'berth-network-wait';
/** Init containers that copy image mounts are named `<prefix><index>`. */
export const MOUNT_PREFIX = 'berth-mount-';
/** The label that a namespace's deny-all NetworkPolicy selects for network 'none' (see the README). */
export const LABEL_NETWORK = 'berth.network';
/**
 * On a pod whose activeDeadlineSeconds is the backend's defaultLifetimeMs (its spec sets no
 * lifetime): that default, in ms. Tells the deadline's end apart from the spec's own, for the error.
 */
export const ANNOTATION_DEFAULT_LIFETIME = 'berth.default-lifetime-ms';

/** The pod's lifetime in ms: the spec's, else the backend's defaultLifetimeMs (24 h; false: none). */
export function podLifetime(spec: EnvironmentSpec, options: K8sBackendOptions): { ms?: number; byDefault: boolean } {
  if (spec.timeouts.lifetimeMs !== undefined) return { ms: spec.timeouts.lifetimeMs, byDefault: false };
  const fallback = options.defaultLifetimeMs ?? DEFAULT_LIFETIME_MS;
  return fallback === false ? { byDefault: false } : { ms: fallback, byDefault: true };
}

/** An image mount as the pod carries it: an init container fills an emptyDir the task container mounts read-only. */
export interface PodImageMount {
  image: string;
  subpath?: string;
  target: string;
}

export interface PodInput {
  name: string;
  namespace: string;
  image: string;
  /** Image mounts, in spec order (their images already mirrored). */
  imageMounts?: readonly PodImageMount[];
  pullPolicy?: string;
  spec: EnvironmentSpec;
  labels: Record<string, string>;
  pullSecrets: readonly string[];
  options: K8sBackendOptions;
  /** Network 'none': the kubelet checks from inside that it holds before the container counts as started. */
  startupProbe?: V1Probe;
  /** spec.services as containers (pod-services.ts), started after the image mounts' copies, before the sandbox's own. */
  services?: readonly V1Container[];
  hostAliases?: readonly V1HostAlias[];
}

/**
 * One pod per environment: restartPolicy Never (a restarted container is a lost sandbox, never a
 * silent reset), berth's keep-alive as the command, requests = limits from the spec (storage as
 * ephemeral-storage), activeDeadlineSeconds from timeouts.lifetimeMs (else the backend's
 * defaultLifetimeMs, so a pod whose machine is gone ends anyway), no service account token.
 */
export function podManifest(input: PodInput): V1Pod {
  const { spec, options } = input;
  const quantities: Record<string, string> = {};
  if (spec.resources.cpus !== undefined) quantities.cpu = `${Math.round(spec.resources.cpus * 1000)}m`;
  if (spec.resources.memoryMb !== undefined) quantities.memory = `${spec.resources.memoryMb}Mi`;
  if (spec.resources.storageMb !== undefined) quantities['ephemeral-storage'] = `${spec.resources.storageMb}Mi`;
  if ((spec.resources.gpus ?? 0) > 0) quantities['nvidia.com/gpu'] = String(spec.resources.gpus);
  const affinity = gpuAffinity(spec, options);
  const lifetime = podLifetime(spec, options);
  const annotations = {
    ...(options.annotations ?? {}),
    ...(lifetime.byDefault ? { [ANNOTATION_DEFAULT_LIFETIME]: String(lifetime.ms) } : {}),
  };
  const volumes: V1Volume[] = [];
  const volumeMounts: V1VolumeMount[] = [];
  const initContainers: V1Container[] = [];
  (input.imageMounts ?? []).forEach((mount, i) => {
    const volume = `berth-image-${i}`;
    volumes.push({ name: volume, emptyDir: {} });
    volumeMounts.push({ name: volume, mountPath: mount.target, readOnly: true });
    initContainers.push({
      name: `${MOUNT_PREFIX}${i}`,
      image: mount.image,
      ...(input.pullPolicy ? { imagePullPolicy: input.pullPolicy } : {}),
      command: imageMountCopyCommand(mount.subpath),
      volumeMounts: [{ name: volume, mountPath: IMAGE_MOUNT_STAGING }],
      // cp's own words reach the pod status (and so the ConfigError) without log access.
      terminationMessagePolicy: 'FallbackToLogsOnError',
    });
  });
  // Network 'none' must hold before a service sends anything: the startup probe's check, looped in
  // a first init container of the sandbox's image (the policy's enforcer may lag the pod's address).
  if (input.services?.length && input.startupProbe?.exec?.command) {
    initContainers.push({
      name: NETWORK_WAIT,
      image: input.image,
      ...(input.pullPolicy ? { imagePullPolicy: input.pullPolicy } : {}),
      command: ['/bin/sh', '-c', 'until "$@" >/dev/null 2>&1; do sleep 0.5; done', 'berth-network-wait', ...input.startupProbe.exec.command],
      terminationMessagePolicy: 'FallbackToLogsOnError',
    });
  }
  initContainers.push(...(input.services ?? []));
  // The sandbox's volumes (shared with its services): an emptyDir of the pod each.
  const shared = new Set(
    [...spec.mounts, ...Object.values(spec.services ?? {}).flatMap((s) => s.mounts)].flatMap((m) => (m.type === 'volume' ? [m.name] : [])),
  );
  for (const name of shared) volumes.push({ name: `${VOLUME_PREFIX}${name}`, emptyDir: {} });
  for (const mount of spec.mounts)
    if (mount.type === 'volume') volumeMounts.push({ name: `${VOLUME_PREFIX}${mount.name}`, mountPath: mount.target, readOnly: mount.readOnly });
  spec.mounts.forEach((mount, i) => {
    if (mount.type !== 'bind') return;
    // A path on the node that runs the pod, not on the machine running berth.
    volumes.push({ name: `berth-host-${i}`, hostPath: { path: mount.source } });
    volumeMounts.push({ name: `berth-host-${i}`, mountPath: mount.target, readOnly: mount.readOnly });
  });
  const container: V1Container = {
    name: CONTAINER,
    image: input.image,
    ...(input.pullPolicy ? { imagePullPolicy: input.pullPolicy } : {}),
    ...(volumeMounts.length ? { volumeMounts } : {}),
    command: keepAliveCommand(spec.timeouts.lifetimeMs),
    env: Object.entries(spec.env).map(([name, value]) => ({ name, value })),
    ...(spec.workdir ? { workingDir: spec.workdir } : {}),
    ...(Object.keys(quantities).length ? { resources: { requests: quantities, limits: quantities } } : {}),
    ...(input.startupProbe ? { startupProbe: input.startupProbe } : {}),
  };
  const pod: V1Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: input.name,
      namespace: input.namespace,
      // An allowlist starts cut off, on 'none', until its own policy is made (PodNetwork.allow).
      labels: { ...input.labels, [LABEL_NETWORK]: typeof spec.network === 'string' ? spec.network : 'none' },
      ...(Object.keys(annotations).length ? { annotations } : {}),
    },
    spec: {
      restartPolicy: 'Never',
      containers: [container],
      ...(initContainers.length ? { initContainers } : {}),
      ...(input.hostAliases?.length ? { hostAliases: [...input.hostAliases] } : {}),
      ...(volumes.length ? { volumes } : {}),
      automountServiceAccountToken: options.serviceAccountName !== undefined,
      enableServiceLinks: false,
      terminationGracePeriodSeconds: 0,
      ...(options.serviceAccountName ? { serviceAccountName: options.serviceAccountName } : {}),
      // The cluster ends the pod at this deadline by itself: the backstop when nothing of berth is left.
      ...(lifetime.ms ? { activeDeadlineSeconds: Math.max(1, Math.ceil(lifetime.ms / 1000)) } : {}),
      ...(input.pullSecrets.length ? { imagePullSecrets: input.pullSecrets.map((name) => ({ name })) } : {}),
      ...(options.nodeSelector ? { nodeSelector: { ...options.nodeSelector } } : {}),
      ...(affinity ? { affinity } : {}),
      ...(options.tolerations ? { tolerations: [...options.tolerations] } : {}),
      ...(options.runtimeClassName ? { runtimeClassName: options.runtimeClassName } : {}),
    },
  };
  return options.patchPod ? options.patchPod(pod, spec) : pod;
}
