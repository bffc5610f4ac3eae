import { ConfigError, ImagePullError, ServiceStartError, TaskFailure, remedied, type BerthError, type EnvironmentSpec } from '@berth/core';
import { lastLines } from '@berth/core/backend-kit';
import { pullFailure } from '@berth/core/backend-kit';
import type { V1Pod } from '@kubernetes/client-node';
import { BACKEND, type Cluster } from './cluster.js';
import { mapApiError } from './k8s-errors.js';
import type { K8sBackendOptions } from './options.js';
import { startupProbeFound } from './network-probe.js';
import type { PodImages } from './pod-images.js';
import { CONTAINER, podLifetime } from './pod-manifest.js';
import type { PodNetwork } from './pod-network.js';
import { podEvents, podReport } from './pod-report.js';
import type { StartState } from './pod-status.js';
import { everyPullWithoutSecret, pullMessage } from './pull-events.js';
import { missingSecrets } from './pull-secrets.js';

/** How long a start waits for the kubelet to pull again after it could not read berth's pull Secret: two back-offs. */
export const SECRET_LAG_MS = 45_000;

/** What a start that did not run knows about itself, to say why in berth's taxonomy. */
export interface FailedStart {
  cluster: Cluster;
  options: K8sBackendOptions;
  network: PodNetwork;
  id: string;
  spec: EnvironmentSpec;
  images: PodImages;
  /** The node the pod was bound to, if it was. */
  node: string | undefined;
  /** The pull secrets the kubelet said it could not read at the first failed pull (waited for once). */
  unread: readonly string[];
  hadCredentials: boolean;
}

/** A pod state that ends a start without a running sandbox. */
export type EndedStart = Exclude<StartState, { kind: 'waiting' } | { kind: 'running' }>;

const ctx = (start: Pick<FailedStart, 'id'>, operation: 'start' | 'pull') => ({ operation, backend: BACKEND, environmentId: start.id });

/** Why a start ended without a running pod, as the berth error its status and events say. */
export async function startFailure(pod: V1Pod, state: EndedStart, start: FailedStart): Promise<BerthError> {
  const events = await podEvents(start.cluster, start.id);
  const cause = podReport(start.id, pod, events);
  switch (state.kind) {
    case 'service_failed': {
      const { service, reason, detail, previous } = state.failure;
      const tail = await serviceLogs(start, service, previous);
      const what =
        reason === 'unhealthy'
          ? `did not become healthy: the kubelet's startup probe (its healthcheck, ${start.spec.services[service]?.healthcheck?.command.join(' ') ?? '?'}) kept failing and it was ended (${detail})`
          : reason === 'oom'
            ? 'was killed for memory (OOMKilled) before it was up'
            : `ended before it was up (${detail})`;
      return new ServiceStartError({
        ...ctx(start, 'start'),
        service,
        reason,
        logTail: tail,
        message: `service ${service} ${what}. Its last log lines: ${tail}`,
        cause,
      });
    }
    case 'pull_failed': {
      const ofService = state.service !== undefined ? start.images.services.get(state.service)?.image : undefined;
      const failing = ofService ?? start.images.mounts.find((m) => m.image.canonical === state.image)?.image ?? start.images.main?.image;
      if (state.service !== undefined) {
        const error = pullFailure(pullMessage(events, state.message), {
          ...ctx(start, 'pull'),
          image: failing?.original ?? '?',
          hadCredentials: start.hadCredentials,
          credentialsHint: remedied(
            'image-auth-pull-secret',
            `pass spec.services.${state.service}.image.auth, or name a pull secret (options.imagePullSecrets)`,
          ),
          cause,
        });
        if (!ImagePullError.isInstance(error)) return error;
        return new ImagePullError({
          ...ctx(start, 'pull'),
          reason: error.reason,
          image: error.image,
          message: `service ${state.service}: ${error.message}`,
          cause: error,
        });
      }
      if (everyPullWithoutSecret(events, start.unread)) {
        // Still without the Secret after the wait: the kubelet's trouble, not the credential's; a new pod may fare better.
        return new ImagePullError({
          ...ctx(start, 'pull'),
          image: failing?.original ?? '?',
          reason: 'transient',
          message: `pulling ${failing?.original ?? '?'} failed: the kubelet could not read the pull Secret (${start.unread.join(', ')}) for ${SECRET_LAG_MS / 1000} s and pulled without it: ${pullMessage(events, state.message)}`,
          cause,
        });
      }
      return pullFailure(pullMessage(events, state.message), {
        ...ctx(start, 'pull'),
        image: failing?.original ?? '?',
        hadCredentials: start.hadCredentials,
        credentialsHint: remedied(
          'image-auth-pull-secret',
          'pass spec.image.auth, or name a pull secret (spec.image.auth.secretName or options.imagePullSecrets)',
        ),
        cause,
      });
    }
    case 'mount_failed': {
      const mount = start.images.mounts[state.index];
      return new ConfigError({
        ...ctx(start, 'start'),
        path: `spec.mounts`,
        message: `the image mount of ${mount?.image.original ?? '?'}${mount?.subpath ? ` (subpath ${mount.subpath})` : ''} at ${mount?.target ?? '?'} could not be copied: ${state.message} (berth copies it with the image's own /bin/sh and cp)`,
        cause,
      });
    }
    case 'config_failed':
      return new ConfigError({
        ...ctx(start, 'start'),
        path: 'spec',
        message: `the pod cannot start its container (${state.reason}): ${state.message}`,
        cause,
      });
    case 'ended': {
      if (state.reason === 'DeadlineExceeded') return deadlineBeforeRunning(start, cause);
      const unprobed = start.spec.network === 'none' ? startupProbeFailure(pod, events, start) : undefined;
      if (unprobed) return Object.assign(unprobed, { cause });
      return new ConfigError({
        ...ctx(start, 'start'),
        path: 'spec.image',
        message: `the pod ended right after starting (${state.reason}: ${state.message}): berth needs /bin/sh in the image`,
        cause,
      });
    }
  }
}

/** A service container's last log lines (its previous run's, when the kubelet restarted it); '' when they cannot be read. */
async function serviceLogs(start: FailedStart, container: string, previous: boolean): Promise<string> {
  const read = (prev: boolean) =>
    start.cluster.core.readNamespacedPodLog({
      name: start.id,
      namespace: start.cluster.namespace,
      container,
      tailLines: 20,
      ...(prev ? { previous: true } : {}),
    });
  const text = await read(previous)
    .catch(() => (previous ? read(false) : ''))
    .catch(() => '');
  return lastLines(typeof text === 'string' ? text : String(text ?? ''));
}

/** A pod on 'none' that ended before its startup probe passed: what the probe found, typed (see PodNetwork.startupFailure). */
function startupProbeFailure(pod: V1Pod, events: Awaited<ReturnType<typeof podEvents>>, start: FailedStart): BerthError | undefined {
  const main = pod.status?.containerStatuses?.find((c) => c.name === CONTAINER);
  if (main?.started) return undefined;
  const found = startupProbeFound([...events.map((e) => e.message ?? ''), main?.state?.terminated?.message ?? '']);
  if (found === undefined && !events.some((e) => /startup probe/i.test(e.message ?? ''))) return undefined;
  return start.network.startupFailure(found, start.node, start.id);
}

/** activeDeadlineSeconds ran out before the pod was running: a lifetime shorter than the start took. */
function deadlineBeforeRunning(start: FailedStart, cause: unknown): TaskFailure {
  const { ms, byDefault } = podLifetime(start.spec, start.options);
  const whose = byDefault ? "the backend's defaultLifetimeMs (the spec sets no timeouts.lifetimeMs)" : "the spec's timeouts.lifetimeMs";
  return new TaskFailure({
    ...ctx(start, 'start'),
    kind: 'LifetimeExceeded',
    message: `pod ${start.id} reached its lifetime of ${ms} ms, ${whose}, before it was running: the cluster ended it (DeadlineExceeded); raise it above the time a start takes`,
    cause,
  });
}

/**
 * A pull secret the pod names that does not exist: the kubelet will never read it, so waiting
 * for its next pull is pointless and "unauthorized" would blame the registry. Named ones only
 * (berth's own exist until the pod is gone).
 */
export async function refuseMissingSecrets(start: Pick<FailedStart, 'cluster' | 'options' | 'spec' | 'id'>, named: readonly string[]): Promise<void> {
  const missing = await missingSecrets(start.cluster, named).catch((error: unknown) => {
    throw mapApiError(error, ctx(start, 'start')) ?? error;
  });
  if (missing.length === 0) return;
  const image = start.spec.image;
  const mainNames = typeof image === 'object' && 'ref' in image && image.auth && 'secretName' in image.auth ? image.auth.secretName : undefined;
  const path = start.options.imagePullSecrets?.includes(missing[0]!)
    ? 'options.imagePullSecrets'
    : mainNames === missing[0]
      ? 'spec.image.auth.secretName'
      : 'spec.mounts';
  throw new ConfigError({
    ...ctx(start, 'start'),
    path,
    message: `the pull secret${missing.length > 1 ? 's' : ''} ${missing.map((n) => `"${n}"`).join(', ')} ${missing.length > 1 ? 'do' : 'does'} not exist in namespace ${start.cluster.namespace}: create it (kubectl create secret docker-registry ...) or name one that exists`,
  });
}
