import type { V1Pod } from '@kubernetes/client-node';
import type { EnvironmentSpec } from '@berth/core';
import { ANNOTATION_DEFAULT_LIFETIME, CONTAINER, MOUNT_PREFIX } from './pod-manifest.js';
import { serviceLoss, serviceStartState, type ServiceFailure } from './pod-services.js';

/** What a pod's status says about starting it: wait, it runs, or why it cannot. */
export type StartState =
  | { kind: 'waiting'; status: string }
  | { kind: 'running'; uid: string; restarts: number }
  | { kind: 'pull_failed'; reason: string; message: string; image?: string; service?: string }
  | { kind: 'mount_failed'; index: number; message: string }
  | { kind: 'config_failed'; reason: string; message: string }
  | { kind: 'ended'; reason: string; message: string }
  | { kind: 'service_failed'; failure: ServiceFailure };

const PULL_REASONS = new Set(['ErrImagePull', 'ImagePullBackOff', 'InvalidImageName', 'ErrImageNeverPull', 'RegistryUnavailable']);
const CONFIG_REASONS = new Set(['CreateContainerConfigError', 'CreateContainerError', 'RunContainerError', 'StartError']);

/**
 * Read one pod status while starting it. `probed`: the container has a startup probe (network
 * 'none' checked by the kubelet), so it runs only once the kubelet says it started.
 */
export function startState(pod: V1Pod, probed = false, spec?: EnvironmentSpec): StartState {
  const status = pod.status ?? {};
  // Image mounts first: their init containers run (and pull) before the task's container.
  for (const init of status.initContainerStatuses ?? []) {
    if (!init.name.startsWith(MOUNT_PREFIX)) continue;
    const reason = init.state?.waiting?.reason;
    if (reason && PULL_REASONS.has(reason)) return { kind: 'pull_failed', reason, message: init.state?.waiting?.message ?? reason, image: init.image };
    const ended = init.state?.terminated;
    if (ended && ended.exitCode !== 0) {
      return {
        kind: 'mount_failed',
        index: Number(init.name.slice(MOUNT_PREFIX.length)),
        message: (ended.message ?? '').trim() || `${ended.reason ?? 'failed'} (exit ${ended.exitCode})`,
      };
    }
    if (!ended) return { kind: 'waiting', status: `Pending: copying image mount ${init.image}${reason ? ` (${reason})` : ''}` };
  }
  // Then the services, in their start order: the sandbox's container waits for them.
  const services = spec ? serviceStartState(pod, spec) : undefined;
  if (services?.kind === 'pull_failed') return services;
  if (services?.kind === 'failed') return { kind: 'service_failed', failure: services.failure };
  if (services?.kind === 'waiting' && !(status.phase === 'Failed' || status.phase === 'Succeeded')) return services;
  const container = status.containerStatuses?.find((c) => c.name === CONTAINER);
  const waiting = container?.state?.waiting;
  if (waiting?.reason && PULL_REASONS.has(waiting.reason)) return { kind: 'pull_failed', reason: waiting.reason, message: waiting.message ?? waiting.reason };
  if (waiting?.reason && CONFIG_REASONS.has(waiting.reason))
    return { kind: 'config_failed', reason: waiting.reason, message: waiting.message ?? waiting.reason };
  const terminated = container?.state?.terminated;
  if (status.phase === 'Failed' || status.phase === 'Succeeded' || terminated) {
    const reason = status.reason ?? terminated?.reason ?? status.phase ?? 'ended';
    return { kind: 'ended', reason, message: status.message ?? terminated?.message ?? `exit ${terminated?.exitCode ?? '?'}` };
  }
  if (status.phase === 'Running' && container?.state?.running) {
    if (probed && container.started !== true) return { kind: 'waiting', status: "Running: checking from inside that network 'none' holds (startup probe)" };
    return { kind: 'running', uid: pod.metadata?.uid ?? '', restarts: container.restartCount ?? 0 };
  }
  // Pending: say why, in the scheduler's or the kubelet's words (the last one becomes lastStatus).
  const scheduled = status.conditions?.find((c) => c.type === 'PodScheduled');
  if (scheduled?.status === 'False') return { kind: 'waiting', status: `Pending: ${scheduled.reason ?? 'not scheduled'}: ${scheduled.message ?? ''}`.trim() };
  if (waiting?.reason) return { kind: 'waiting', status: `Pending: ${waiting.reason}${waiting.message ? `: ${waiting.message}` : ''}` };
  return { kind: 'waiting', status: `${status.phase ?? 'Pending'}` };
}

/** Whether the pod that was started is still the one running, and if not, what was seen. */
export function liveState(
  pod: V1Pod,
  started: { uid: string; restarts: number },
  spec?: EnvironmentSpec,
): { running: true } | { running: false; reason: string; lifetimeExpired?: boolean; defaultLifetimeMs?: number } {
  if (pod.metadata?.uid !== started.uid) return { running: false, reason: 'replaced (a new pod with the same name)' };
  if (pod.metadata?.deletionTimestamp) return { running: false, reason: 'deleted' };
  const status = pod.status ?? {};
  const container = status.containerStatuses?.find((c) => c.name === CONTAINER);
  const terminated = container?.state?.terminated;
  // berth's keep-alive exits 0 only when timeouts.lifetimeMs runs out; activeDeadlineSeconds says
  // DeadlineExceeded. Either is the lifetime, not a loss. A pod whose deadline is the backend's
  // default (annotated) has a keep-alive that never ends by itself: only DeadlineExceeded is that
  // lifetime, and the error names the option that set it.
  const byDefault = Number(pod.metadata?.annotations?.[ANNOTATION_DEFAULT_LIFETIME] ?? Number.NaN);
  const deadline = status.reason === 'DeadlineExceeded';
  const lifetimeExpired = Number.isFinite(byDefault) ? deadline : deadline || status.phase === 'Succeeded' || terminated?.exitCode === 0;
  const lifetime = Number.isFinite(byDefault) && deadline ? { defaultLifetimeMs: byDefault } : {};
  if (status.phase === 'Failed' || status.phase === 'Succeeded') {
    const reason = status.reason ?? (terminated?.reason === 'OOMKilled' ? 'OOMKilled' : status.phase);
    return { running: false, reason: status.message ? `${reason}: ${status.message}` : reason, lifetimeExpired, ...lifetime };
  }
  if (terminated) {
    return {
      running: false,
      reason: terminated.reason === 'OOMKilled' ? 'OOMKilled' : `${terminated.reason ?? 'terminated'} (exit ${terminated.exitCode})`,
      lifetimeExpired,
      ...lifetime,
    };
  }
  if ((container?.restartCount ?? 0) !== started.restarts) return { running: false, reason: 'container restarted' };
  if (!container?.state?.running) return { running: false, reason: `container not running (${status.phase ?? 'unknown'})` };
  // A service that ended or was restarted: the sandbox's world is not whole.
  const service = spec ? serviceLoss(pod, spec) : undefined;
  if (service) return { running: false, reason: service };
  return { running: true };
}
