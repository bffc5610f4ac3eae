import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { BackendUnavailableError, ConfigError } from '@berth/core';
import { sandboxLabels } from '@berth/core/backend-kit';
import { BACKEND, type Cluster } from './cluster.js';
import { ADMISSIONS_DIR, ADMIT_SCRIPT, PROXY_PORTS } from './egress-proxy-admission.js';
import { EGRESS_PROXY_PROGRAM } from './egress-proxy-program.generated.js';
import { spawnExec } from './exec-socket.js';
import { idempotent, mapApiError, statusOf } from './k8s-errors.js';
import type { K8sBackendOptions } from './options.js';
import { CONTAINER } from './pod-manifest.js';

/** The label of berth's egress proxy pods: allowlisted pods' policies let them reach pods with it. */
export const LABEL_EGRESS_PROXY = 'berth.egress-proxy';
/** The proxy's image when options.egressProxy names none: any image with node >= 20 on PATH will do. */
export const DEFAULT_PROXY_IMAGE = 'node:20-alpine';

const READY_MS = 180_000;
const POLL_MS = 250;
const ADMIT_LIMIT_MS = 30_000;
/** Waiting reasons of a container whose image the cluster cannot pull or run. */
const IMAGE_FAILURES = new Set(['ErrImagePull', 'ImagePullBackOff', 'InvalidImageName', 'ErrImageNeverPull', 'CreateContainerError']);

/** The proxy pod sandboxes are sent to: its name and address. */
export interface ProxyPod {
  name: string;
  address: string;
}

/** options.egressProxy in its object form (true: every default). */
export function proxyOptions(options: K8sBackendOptions): { image?: string; nameservers?: readonly string[] } | undefined {
  const given = options.egressProxy;
  return given === undefined || given === false ? undefined : given === true ? {} : given;
}

/**
 * berth's egress proxy in the cluster, for one backend instance's allowlists with names or
 * wildcards: one pod running the kit's EgressProxy (egress-proxy-main.ts, sent as its `node -e`
 * program), made when the first such sandbox needs it and deleted when the last one lets go. A
 * sandbox's DNS points at it, its answers for allowed names are the proxy's own address, and the
 * sandbox's policy lets it reach only the proxy (and its listed addresses): TLS is let through by
 * server name and HTTP by Host, connected to the name as the proxy pod resolves it (the cluster's
 * DNS, or options.egressProxy.nameservers). Sandboxes are told apart by their pod addresses, each
 * admitted by a file the backend writes with an exec. Labelled as berth's sandboxes are, so sweep
 * and the guardian remove it after a runner that died.
 */
export class EgressProxyPod {
  readonly #cluster: () => Cluster;
  readonly #options: K8sBackendOptions;
  #users = 0;
  #pending: Promise<ProxyPod> | undefined;

  constructor(cluster: () => Cluster, options: K8sBackendOptions) {
    this.#cluster = cluster;
    this.#options = options;
  }

  /** The proxy pod, made and ready first where needed; every acquire is matched by one release(). */
  async acquire(environmentId: string, signal?: AbortSignal): Promise<ProxyPod> {
    this.#users += 1;
    const pending = (this.#pending ??= this.#make(environmentId, signal));
    try {
      return await pending;
    } catch (error) {
      if (this.#pending === pending) this.#pending = undefined;
      this.#users -= 1;
      throw error;
    }
  }

  /** One user fewer; the last one's release deletes the pod. */
  async release(): Promise<void> {
    this.#users -= 1;
    if (this.#users > 0 || !this.#pending) return;
    const pending = this.#pending;
    this.#pending = undefined;
    const pod = await pending.catch(() => undefined);
    if (!pod) return;
    const { core, namespace } = this.#cluster();
    await idempotent(() => core.deleteNamespacedPod({ name: pod.name, namespace, gracePeriodSeconds: 0 })).catch((error: unknown) => {
      if (statusOf(error) !== 404) throw mapApiError(error, { operation: 'teardown' }) ?? error;
    });
  }

  /** Lets `source` (a sandbox pod's address) through by `allow`'s names and wildcards; an empty list withdraws it. */
  async admit(pod: ProxyPod, source: string, allow: readonly string[], environmentId: string): Promise<void> {
    const proc = await spawnExec(this.#cluster(), pod.name, {
      argv: ['node', '-e', ADMIT_SCRIPT, ADMISSIONS_DIR, source, allow.length ? JSON.stringify(allow) : ''],
      env: {},
      stdin: false,
    });
    const output: Buffer[] = [];
    proc.stdout.on('data', (chunk: Buffer) => output.push(chunk));
    proc.stderr.on('data', (chunk: Buffer) => output.push(chunk));
    const timer = setTimeout(() => proc.abandon(), ADMIT_LIMIT_MS);
    const { code } = await proc.exit.finally(() => clearTimeout(timer));
    if (code !== 0)
      throw new BackendUnavailableError({
        operation: 'network',
        backend: BACKEND,
        environmentId,
        message: `berth's egress proxy pod ${pod.name} did not take the sandbox's allowlist (exit ${code}): ${Buffer.concat(output).toString('utf8').trim().slice(-300)}`,
      });
  }

  async #make(environmentId: string, signal?: AbortSignal): Promise<ProxyPod> {
    const { core, namespace } = this.#cluster();
    const name = `${this.#options.namePrefix ?? 'berth'}-egress-${randomBytes(4).toString('hex')}`;
    try {
      await idempotent(() => core.createNamespacedPod({ namespace, body: this.#manifest(name, namespace) }), signal);
    } catch (error) {
      throw mapApiError(error, { operation: 'start', environmentId }) ?? error;
    }
    try {
      return { name, address: await this.#ready(name, environmentId, signal) };
    } catch (error) {
      await idempotent(() => core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 })).catch(() => undefined);
      throw error;
    }
  }

  /** Polls the pod until it is Ready (listening: its readiness probe); its address. */
  async #ready(name: string, environmentId: string, signal?: AbortSignal): Promise<string> {
    const { core, namespace } = this.#cluster();
    const deadline = Date.now() + READY_MS;
    for (;;) {
      signal?.throwIfAborted();
      const pod = await idempotent(() => core.readNamespacedPod({ name, namespace }), signal);
      const ready = pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
      if (ready && pod.status?.podIP) return pod.status.podIP;
      const status = pod.status?.containerStatuses?.[0];
      const waiting = status?.state?.waiting;
      if (waiting?.reason && IMAGE_FAILURES.has(waiting.reason)) throw this.#imageFailure(environmentId, `${waiting.reason}: ${waiting.message ?? ''}`.trim());
      const ended = status?.lastState?.terminated ?? status?.state?.terminated;
      if (ended && (ended.exitCode ?? 0) !== 0)
        throw this.#imageFailure(
          environmentId,
          `its program exited ${ended.exitCode} (${ended.reason ?? ''}${ended.message ? `: ${ended.message.slice(-300)}` : ''})`,
        );
      if (Date.now() > deadline)
        throw new BackendUnavailableError({
          operation: 'network',
          backend: BACKEND,
          environmentId,
          message: `berth's egress proxy pod ${name} was not ready ${READY_MS / 1000} s after its creation (phase ${pod.status?.phase ?? '?'}${waiting?.reason ? `, ${waiting.reason}` : ''})`,
        });
      await sleep(POLL_MS);
    }
  }

  #imageFailure(environmentId: string, why: string): ConfigError {
    const image = proxyOptions(this.#options)?.image ?? DEFAULT_PROXY_IMAGE;
    return new ConfigError({
      operation: 'network',
      backend: BACKEND,
      environmentId,
      path: 'options.egressProxy.image',
      message: `berth's egress proxy pod (image ${image}, which allowlists with names need) did not start: ${why}. Set options.egressProxy.image to an image with node >= 20 on PATH that the cluster can pull (a mirror of ${DEFAULT_PROXY_IMAGE}), or list addresses or ranges instead of names`,
    });
  }

  #manifest(name: string, namespace: string): V1Pod {
    const given = proxyOptions(this.#options) ?? {};
    const env = [
      { name: 'BERTH_EGRESS_POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
      ...(given.nameservers?.length ? [{ name: 'BERTH_EGRESS_NAMESERVERS', value: given.nameservers.join(',') }] : []),
    ];
    return {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace, labels: sandboxLabels(name, this.#options.labels, { [LABEL_EGRESS_PROXY]: 'true' }) },
      spec: {
        containers: [
          {
            name: CONTAINER,
            image: given.image ?? DEFAULT_PROXY_IMAGE,
            command: ['node', '-e', EGRESS_PROXY_PROGRAM],
            env,
            ports: [
              { name: 'tls', containerPort: PROXY_PORTS.tls },
              { name: 'http', containerPort: PROXY_PORTS.http },
              { name: 'dns', containerPort: PROXY_PORTS.dns, protocol: 'UDP' },
            ],
            readinessProbe: { tcpSocket: { port: PROXY_PORTS.tls }, periodSeconds: 1 },
            // Admissions outlive a restart of the container (its own /tmp would not).
            volumeMounts: [{ name: 'admissions', mountPath: ADMISSIONS_DIR }],
            resources: { requests: { cpu: '50m', memory: '64Mi' } },
          },
        ],
        volumes: [{ name: 'admissions', emptyDir: {} }],
        automountServiceAccountToken: false,
        enableServiceLinks: false,
        terminationGracePeriodSeconds: 0,
        ...(this.#options.imagePullSecrets?.length ? { imagePullSecrets: this.#options.imagePullSecrets.map((n) => ({ name: n })) } : {}),
        ...(this.#options.nodeSelector ? { nodeSelector: { ...this.#options.nodeSelector } } : {}),
        ...(this.#options.tolerations ? { tolerations: [...this.#options.tolerations] } : {}),
      },
    };
  }
}
