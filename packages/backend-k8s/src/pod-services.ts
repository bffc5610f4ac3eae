import type { V1Container, V1ContainerStatus, V1HostAlias, V1Pod, V1Probe } from '@kubernetes/client-node';
import { ConfigError, oneShots, type EnvironmentSpec, type Service } from '@berth/core';
import { BACKEND } from './cluster.js';
import { VOLUME_PREFIX } from './pod-manifest.js';

/**
 * A sandbox's services (spec.services) as containers of its pod: each a native sidecar (an init
 * container with restartPolicy Always), a one-shot that others wait to complete a plain init
 * container, in dependsOn order. The kubelet starts them one after another and, where a service
 * has a healthcheck, waits for its startup probe before the next (and before the sandbox's own
 * container): compose's order and `up --wait`, done by the engine. They share the pod's network
 * namespace, so every name (and 'main') is 127.0.0.1 in /etc/hosts, and the pod's NetworkPolicy
 * holds for the group.
 */

/** Each image a service runs, as the manifest takes it. */
export type ServiceImages = ReadonlyMap<string, { image: string; pullPolicy?: string }>;

/** The services in an order that starts each after what it depends on (spec validation refused cycles). */
export function startOrder(services: Readonly<Record<string, Service>>): string[] {
  const order: string[] = [];
  const seen = new Set<string>();
  const visit = (name: string) => {
    if (seen.has(name)) return;
    seen.add(name);
    for (const dep of Object.keys(services[name]?.dependsOn ?? {})) visit(dep);
    order.push(name);
  };
  for (const name of Object.keys(services)) visit(name);
  return order;
}

/** Before any I/O: what a pod cannot hold, by path (two services on one port; a user that is not a uid). */
export function refuseUnpoddable(spec: EnvironmentSpec, environmentId: string): void {
  const fail = (path: string, message: string) => new ConfigError({ operation: 'config', backend: BACKEND, environmentId, path, message });
  const ports = new Map<number, string>();
  for (const [name, service] of Object.entries(spec.services)) {
    for (const port of service.ports) {
      const holder = ports.get(port);
      if (holder !== undefined)
        throw fail(
          `spec.services.${name}.ports`,
          `spec.services.${name} and ${holder} both listen on port ${port}: on Kubernetes a sandbox's services share its pod's network namespace, so one port holds one listener; move one of them`,
        );
      ports.set(port, name);
    }
    if (service.user !== undefined && !/^\d+(:\d+)?$/.test(service.user))
      throw fail(
        `spec.services.${name}.user`,
        `spec.services.${name}.user is "${service.user}": Kubernetes runs a container as a uid (runAsUser), so give uid or uid:gid`,
      );
  }
}

function probeOf(service: Service): V1Probe | undefined {
  const check = service.healthcheck;
  if (!check) return undefined;
  const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));
  return {
    exec: { command: [...check.command] },
    periodSeconds: seconds(check.intervalMs),
    timeoutSeconds: seconds(check.timeoutMs),
    // compose's retries count after the start period; the kubelet's threshold counts from the start.
    failureThreshold: check.retries + Math.ceil(check.startPeriodMs / Math.max(1000, check.intervalMs)),
  };
}

/** The services' containers, in start order. */
export function serviceContainers(spec: EnvironmentSpec, images: ServiceImages): V1Container[] {
  const completes = oneShots(spec.services, spec.dependsOn);
  return startOrder(spec.services).map((name) => {
    const service = spec.services[name]!;
    const image = images.get(name);
    if (!image) throw new Error(`unreachable: service ${name} has no image`);
    const quantities: Record<string, string> = {};
    if (service.resources.cpus !== undefined) quantities.cpu = `${Math.round(service.resources.cpus * 1000)}m`;
    if (service.resources.memoryMb !== undefined) quantities.memory = `${service.resources.memoryMb}Mi`;
    const [uid, gid] = service.user?.split(':') ?? [];
    const probe = probeOf(service);
    return {
      name,
      image: image.image,
      ...(image.pullPolicy ? { imagePullPolicy: image.pullPolicy } : {}),
      ...(service.entrypoint ? { command: [...service.entrypoint] } : {}),
      ...(service.command ? { args: [...service.command] } : {}),
      env: Object.entries(service.env).map(([k, value]) => ({ name: k, value })),
      ...(service.workdir ? { workingDir: service.workdir } : {}),
      ...(service.mounts.length
        ? { volumeMounts: service.mounts.map((m) => ({ name: `${VOLUME_PREFIX}${m.name}`, mountPath: m.target, readOnly: m.readOnly })) }
        : {}),
      ...(uid !== undefined ? { securityContext: { runAsUser: Number(uid), ...(gid !== undefined ? { runAsGroup: Number(gid) } : {}) } } : {}),
      ...(Object.keys(quantities).length ? { resources: { requests: quantities, limits: quantities } } : {}),
      // A one-shot runs to its end before what follows; the rest run beside the sandbox.
      ...(completes.has(name) ? {} : { restartPolicy: 'Always' }),
      ...(probe && !completes.has(name) ? { startupProbe: probe } : {}),
      terminationMessagePolicy: 'FallbackToLogsOnError',
    };
  });
}

/** Every service name and alias, and 'main', on 127.0.0.1: the pod's one network namespace. */
export function serviceHostAliases(spec: EnvironmentSpec): V1HostAlias[] {
  const names = Object.entries(spec.services).flatMap(([name, s]) => [name, ...s.aliases]);
  return names.length ? [{ ip: '127.0.0.1', hostnames: [...names, 'main'] }] : [];
}

export type ServiceFailure = { service: string; reason: 'unhealthy' | 'exited' | 'oom'; detail: string; previous: boolean };

const PULL_REASONS = new Set(['ErrImagePull', 'ImagePullBackOff', 'InvalidImageName', 'ErrImageNeverPull', 'RegistryUnavailable']);

/** While the pod starts: a service's pull that failed, a service that failed, the one still coming up, or undefined (all up). */
export function serviceStartState(
  pod: V1Pod,
  spec: EnvironmentSpec,
):
  | { kind: 'pull_failed'; service: string; reason: string; message: string; image?: string }
  | { kind: 'failed'; failure: ServiceFailure }
  | { kind: 'waiting'; status: string }
  | undefined {
  const names = Object.keys(spec.services);
  if (names.length === 0) return undefined;
  const completes = oneShots(spec.services, spec.dependsOn);
  const statuses = new Map((pod.status?.initContainerStatuses ?? []).map((s) => [s.name, s]));
  for (const name of startOrder(spec.services)) {
    const status = statuses.get(name);
    const waiting = status?.state?.waiting;
    if (waiting?.reason && PULL_REASONS.has(waiting.reason))
      return { kind: 'pull_failed', service: name, reason: waiting.reason, message: waiting.message ?? waiting.reason, image: status?.image };
    const failure = failed(name, status, completes.has(name), spec.services[name]!);
    if (failure) return { kind: 'failed', failure };
    const up = completes.has(name) ? status?.state?.terminated?.exitCode === 0 : status?.started === true;
    if (!up) return { kind: 'waiting', status: `Pending: starting service ${name}${waiting?.reason ? ` (${waiting.reason})` : ''}` };
  }
  return undefined;
}

function failed(name: string, status: V1ContainerStatus | undefined, oneShot: boolean, service: Service): ServiceFailure | undefined {
  if (!status) return undefined;
  const ended = status.state?.terminated ?? ((status.restartCount ?? 0) > 0 ? status.lastState?.terminated : undefined);
  if (!ended) return undefined;
  if (oneShot && status.state?.terminated && ended.exitCode === 0) return undefined;
  const previous = !status.state?.terminated;
  if (ended.reason === 'OOMKilled') return { service: name, reason: 'oom', detail: 'OOMKilled', previous };
  // The kubelet kills a sidecar whose startup probe keeps failing (then restarts it): unhealthy.
  const probeKilled = !oneShot && service.healthcheck !== undefined && (ended.exitCode === 137 || ended.exitCode === 143) && ended.reason !== 'Completed';
  const detail = `${ended.reason ?? 'terminated'} (exit ${ended.exitCode})`;
  return { service: name, reason: probeKilled ? 'unhealthy' : 'exited', detail, previous };
}

/** Once running: a service that ended or restarted (a one-shot that completed aside), as the sandbox's loss, else undefined. */
export function serviceLoss(pod: V1Pod, spec: EnvironmentSpec): string | undefined {
  const completes = oneShots(spec.services, spec.dependsOn);
  const statuses = new Map((pod.status?.initContainerStatuses ?? []).map((s) => [s.name, s]));
  for (const name of Object.keys(spec.services)) {
    if (completes.has(name)) continue;
    const status = statuses.get(name);
    if (!status) return `service ${name}: not in the pod's status`;
    const ended = status.state?.terminated ?? status.lastState?.terminated;
    if ((status.restartCount ?? 0) > 0 || status.state?.terminated)
      return `service ${name}: ${ended?.reason === 'OOMKilled' ? 'OOMKilled' : `${ended?.reason ?? 'ended'} (exit ${ended?.exitCode ?? '?'})`}`;
  }
  return undefined;
}
