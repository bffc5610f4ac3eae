import {
  ConfigError,
  SandboxLostError,
  describeImage,
  isBuiltImage,
  type EnvironmentSpec,
  type ImageAuth,
  type NetworkMode,
  type Operation,
} from '@berth/core';
import {
  retryIdempotent,
  type CreationLimiter,
  throwIfAborted,
  type CreateContext,
  type ProcessRequest,
  type SandboxProcess,
  type SandboxStatus,
  type SandboxTransport,
} from '@berth/core/backend-kit';
import type { V1Pod } from '@kubernetes/client-node';
import { BACKEND, type Cluster } from './cluster.js';
import { spawnExec } from './exec-socket.js';
import { apiMessage, idempotent, mapApiError, statusOf, transientAnswer } from './k8s-errors.js';
import type { K8sBackendOptions } from './options.js';
import { CONTAINER, podManifest } from './pod-manifest.js';
import type { PodNetwork } from './pod-network.js';
import { PodNetworking } from './pod-networking.js';
import type { EgressProxyPod } from './egress-proxy-pod.js';
import { acquirePullSecrets, manifestMounts, withMain, withService, type PodImages } from './pod-images.js';
import { refuseUnpoddable, serviceContainers, serviceHostAliases, serviceLoss } from './pod-services.js';
import { unreadSecrets } from './pull-events.js';
import { podEvents } from './pod-report.js';
import type { PodInformer, WatchOutcome } from './pod-informer.js';
import { liveState, startState, type StartState } from './pod-status.js';
import { refuseMissingSecrets, SECRET_LAG_MS, startFailure, type FailedStart } from './start-failure.js';

const GONE_WAIT_MS = 30_000;
/** A create the API server throttled (429) is tried again more patiently than one that failed. */
const THROTTLED_RETRIES = { attempts: 10, initialMs: 500, maxMs: 10_000, maxRetryAfterMs: 30_000 } as const;

/** What the pods of one backend instance share. */
export interface PodShared {
  cluster: Cluster;
  options: K8sBackendOptions;
  /** Bounds pod deletions, apart from creations: a storm of teardowns must not starve starts. */
  removals: CreationLimiter;
  /** Network 'none' and switching: the deny-all policy, and whether the cluster enforces it. */
  network: PodNetwork;
  /** The one watch over this process's pods that every start and removal waits on. */
  informer: PodInformer;
  /** berth's egress proxy pod, for allowlists with names under options.egressProxy. */
  egressProxy: EgressProxyPod;
}

/** One pod, as the kit's transport. Named after the environment id, so it can be found before create returns. */
export class K8sSandbox implements SandboxTransport {
  readonly #cluster: Cluster;
  readonly #options: K8sBackendOptions;
  readonly #id: string;
  readonly #spec: EnvironmentSpec;
  #images: PodImages;
  /** The pod that started (its UID and the container's restart count): anything else is a lost sandbox. */
  #started: { uid: string; restarts: number } | undefined;
  /** The Secrets made from credentials for this pod, released at removal. */
  #secrets: string[] = [];
  /** The pull secrets the kubelet said it could not read at the first failed pull (waited for once). */
  #unread: string[] = [];
  #hadCredentials = false;
  /** The node the pod was bound to, once the watch said. */
  #node: string | undefined;
  /** Start phases already said (each once). */
  readonly #reached = new Set<'pulled' | 'running'>();
  /** Ends the watch over the services (at removal). */
  readonly #watching = new AbortController();
  /** A create still running (settles, never rejects): it may yet make a pod naming #secrets. */
  #creating: Promise<void> | undefined;

  readonly #removals: CreationLimiter;
  readonly #network: PodNetwork;
  /** This pod's network: 'none' proved, an allowlist applied, switches (see PodNetworking). */
  readonly #networking: PodNetworking;
  readonly #informer: PodInformer;
  /** restartPolicy may be patched, a pod replaced by name: failed commands are checked against the pod started. */
  readonly replaceable = true;

  constructor(shared: PodShared, id: string, spec: EnvironmentSpec, images: PodImages) {
    this.#cluster = shared.cluster;
    this.#options = shared.options;
    this.#removals = shared.removals;
    this.#network = shared.network;
    this.#informer = shared.informer;
    this.#networking = new PodNetworking(shared, id, spec);
    this.#id = id;
    this.#spec = spec;
    this.#images = images;
  }

  #ctx(operation: Operation) {
    return { operation, backend: BACKEND, environmentId: this.#id };
  }

  async create(ctx: CreateContext): Promise<void> {
    const work = this.#create(ctx);
    this.#creating = work.then(
      () => undefined,
      () => undefined,
    );
    try {
      await work;
    } finally {
      this.#creating = undefined;
    }
  }

  async #create(ctx: CreateContext): Promise<void> {
    const { namespace } = this.#cluster;
    refuseUnpoddable(this.#spec, this.#id);
    const built = await this.#build(ctx);
    if (built) this.#images = withMain(this.#images, built, this.#options);
    await this.#buildServices(ctx);
    const main = this.#images.main;
    if (!main) throw new Error('unreachable: an image is pulled or built');
    this.#secrets = await acquirePullSecrets(this.#images, this.#id, this.#options);
    const pullSecrets = [...this.#images.pullSecrets, ...this.#secrets];
    this.#hadCredentials = pullSecrets.length > 0;
    throwIfAborted(ctx.signal, this.#ctx('start'));
    const probe = await this.#networking.beforeCreate(ctx.notify, ctx.signal);
    const { policy } = main;
    const pullPolicy = (p: string) => (p === 'always' ? 'Always' : p === 'never' ? 'Never' : 'IfNotPresent');
    const serviceImages = new Map(
      [...this.#images.services].map(([name, pull]) => [name, { image: pull.image.canonical, pullPolicy: pullPolicy(pull.policy) }]),
    );
    const body = podManifest({
      name: this.#id,
      namespace,
      image: main.image.canonical,
      imageMounts: manifestMounts(this.#images),
      pullPolicy: pullPolicy(policy),
      spec: this.#spec,
      services: serviceContainers(this.#spec, serviceImages),
      hostAliases: serviceHostAliases(this.#spec),
      labels: { ...(this.#options.labels ?? {}), ...ctx.labels },
      pullSecrets,
      options: this.#options,
      ...probe,
    });
    ctx.progress({ phase: 'starting', status: `creating pod ${namespace}/${this.#id}` });
    // Followed from before the create, so no change of the new pod is missed.
    const following = new AbortController();
    const stopFollowing = () => following.abort(ctx.signal.reason);
    ctx.signal.addEventListener('abort', stopFollowing, { once: true });
    const first = this.#informer.follow(this.#id, this.#decideStart(ctx, 0), following.signal);
    first.outcome.catch(() => undefined);
    try {
      await first.registered;
      await this.#createPod(body, ctx);
      first.exists();
      await this.#waitRunning(ctx, first.outcome);
    } finally {
      ctx.signal.removeEventListener('abort', stopFollowing);
      following.abort();
    }
    const uid = this.#started?.uid;
    if (!uid) throw new Error('unreachable: a pod that started has a UID');
    await this.#networking.afterRunning(uid, this.#node, ctx);
    this.#watchServices(ctx);
  }

  /**
   * While the sandbox lives, its services on the one pod watch: the kubelet restarts a sidecar that
   * ended (restartPolicy Always), so a command may never fail for it; the restart is the loss.
   */
  #watchServices(ctx: CreateContext): void {
    if (Object.keys(this.#spec.services).length === 0) return;
    const watch = this.#informer.follow(this.#id, (pod) => serviceLoss(pod, this.#spec), this.#watching.signal, { exists: true });
    void watch.outcome.then(
      (outcome) => {
        if ('decided' in outcome) ctx.lost(outcome.decided);
      },
      () => undefined,
    );
  }

  async #createPod(body: V1Pod, ctx: CreateContext): Promise<void> {
    const { core, namespace } = this.#cluster;
    try {
      // Retried like a read: the name is berth's own (48 random bits), so 409 means an earlier try got through.
      // A 429 (the API server's priority and fairness) also tells the creation limiter to back off.
      await retryIdempotent(
        () =>
          core.createNamespacedPod({ namespace, body }).catch((error: unknown) => {
            if (statusOf(error) === 409) return undefined;
            throw error;
          }),
        (error) => {
          const answer = transientAnswer(error);
          if (!answer || statusOf(error) !== 429) return answer;
          ctx.progress({ throttled: answer.retryAfterMs !== undefined ? { retryAfterMs: answer.retryAfterMs } : {} });
          return { ...answer, policy: THROTTLED_RETRIES };
        },
        { signal: ctx.signal },
      );
      ctx.progress({ reached: 'accepted' });
    } catch (error) {
      if (statusOf(error) === 422 || statusOf(error) === 400) {
        throw new ConfigError({ ...this.#ctx('start'), path: 'spec', message: `the Kubernetes API refused the pod: ${apiMessage(error)}`, cause: error });
      }
      throw mapApiError(error, this.#ctx('start')) ?? error;
    }
  }

  /** Relabels the pod (an allowlist: its own policy first); returns once the new state holds inside it (see PodNetworking). */
  async setNetwork(mode: NetworkMode): Promise<void> {
    const uid = this.#started?.uid;
    if (!uid) throw new Error('unreachable: the kit switches networks only of a started sandbox');
    await this.#networking.set(mode, uid);
  }

  /** `image: { build }`: the builder builds and pushes it; the pod then pulls it like any image. */
  async #build(ctx: CreateContext): Promise<{ ref: string; auth?: ImageAuth } | undefined> {
    const image = this.#spec.image;
    if (!isBuiltImage(image)) return undefined;
    const builder = this.#options.builder;
    if (!builder) throw new Error('unreachable: assertSupported refuses builds without a builder');
    ctx.progress({ phase: 'building', status: `building ${describeImage(image)} (${builder.name})` });
    return builder.build({
      build: image.build,
      signal: ctx.signal,
      onProgress: (build) => ctx.progress({ build }),
      backend: BACKEND,
      environmentId: this.#id,
    });
  }

  /** Services built from a Dockerfile: the builder builds and pushes each, the pod pulls it. */
  async #buildServices(ctx: CreateContext): Promise<void> {
    for (const [name, service] of Object.entries(this.#spec.services)) {
      const image = service.image;
      if (!isBuiltImage(image)) continue;
      const builder = this.#options.builder;
      if (!builder) throw new Error('unreachable: assertSupported refuses builds without a builder');
      ctx.progress({ phase: 'building', status: `building service ${name}'s image (${builder.name})` });
      const ref = await builder.build({
        build: image.build,
        signal: ctx.signal,
        onProgress: (build) => ctx.progress({ build }),
        backend: BACKEND,
        environmentId: this.#id,
      });
      this.#images = withService(this.#images, name, ref, this.#options);
    }
  }

  /** What a start waits for in the pod's states: anything but 'waiting' (a failed pull only after `patientUntil`). */
  #decideStart(ctx: CreateContext, patientUntil: number) {
    return (pod: V1Pod): { pod: V1Pod; state: StartState } | undefined => {
      this.#marks(pod, ctx);
      const state = startState(pod, this.#networking.probed, this.#spec);
      if (state.kind === 'pull_failed' && Date.now() < patientUntil) {
        ctx.progress({ status: `Pending: ${state.reason}: waiting for the kubelet's next pull, now that the pull secret exists` });
        return undefined;
      }
      if (state.kind !== 'waiting') return { pod, state };
      ctx.progress({ status: state.status });
      return undefined;
    };
  }

  /** The start's phases as the pod's states show them, each said once: scheduled, pulled, running. */
  #marks(pod: V1Pod, ctx: CreateContext): void {
    const node = pod.spec?.nodeName;
    if (node && !this.#node) {
      this.#node = node;
      ctx.progress({ reached: 'scheduled' });
    }
    const main = pod.status?.containerStatuses?.find((c) => c.name === CONTAINER);
    if (!this.#reached.has('pulled') && (main?.imageID || main?.state?.running || main?.state?.terminated)) {
      this.#reached.add('pulled');
      ctx.progress({ reached: 'pulled' });
    }
    if (!this.#reached.has('running') && pod.status?.phase === 'Running' && main?.state?.running) {
      this.#reached.add('running');
      ctx.progress({ reached: 'running' });
    }
  }

  /** Wait (on the backend's one pod watch) until the pod runs, or fail fast with the class its status says. */
  async #waitRunning(ctx: CreateContext, first: Promise<WatchOutcome<{ pod: V1Pod; state: StartState }>>): Promise<void> {
    // Until then a failed pull is the kubelet's, not the registry's answer (see unreadSecrets).
    let patientUntil = 0;
    let pending = first;
    for (;;) {
      let outcome;
      try {
        outcome = await pending;
      } catch (error) {
        throwIfAborted(ctx.signal, this.#ctx('start'));
        throw mapApiError(error, this.#ctx('start')) ?? error;
      }
      if ('gone' in outcome) throw new SandboxLostError({ ...this.#ctx('start'), message: `pod ${this.#id} was deleted while starting`, lastState: 'deleted' });
      const { pod, state } = outcome.decided;
      if (state.kind === 'pull_failed' && patientUntil === 0) {
        const unread = unreadSecrets(await podEvents(this.#cluster, this.#id), [...this.#images.pullSecrets, ...this.#secrets]);
        if (unread.length > 0) {
          await refuseMissingSecrets(
            this.#failedStart(),
            unread.filter((name) => !this.#secrets.includes(name)),
          );
          this.#unread = unread;
          patientUntil = Date.now() + SECRET_LAG_MS;
          pending = this.#informer.follow(this.#id, this.#decideStart(ctx, patientUntil), ctx.signal, { read: true }).outcome;
          continue;
        }
      }
      return this.#decide(pod, state);
    }
  }

  /** What a start ends with, once the pod's status has decided it. */
  async #decide(pod: V1Pod, state: StartState): Promise<void> {
    if (state.kind === 'waiting') throw new Error('unreachable: a start decides on anything but waiting');
    if (state.kind === 'running') {
      this.#started = { uid: state.uid, restarts: state.restarts };
      return;
    }
    throw await startFailure(pod, state, this.#failedStart());
  }

  #failedStart(): FailedStart {
    return {
      cluster: this.#cluster,
      options: this.#options,
      network: this.#network,
      images: this.#images,
      id: this.#id,
      spec: this.#spec,
      node: this.#node,
      unread: this.#unread,
      hadCredentials: this.#hadCredentials,
    };
  }

  async inspect(): Promise<SandboxStatus> {
    let pod;
    try {
      pod = await idempotent(() => this.#cluster.core.readNamespacedPod({ name: this.#id, namespace: this.#cluster.namespace }));
    } catch (error) {
      if (statusOf(error) === 404) return { running: false, reason: 'removed' };
      throw mapApiError(error, this.#ctx('exec')) ?? error;
    }
    if (!this.#started) return { running: false, reason: 'never started' };
    return liveState(pod, this.#started, this.#spec);
  }

  async remove(): Promise<void> {
    this.#watching.abort();
    await this.#networking.stop();
    await this.#removals.run(() => this.#removePod());
    await this.#networking.remove();
    const creating = this.#creating;
    if (creating) {
      // A removal during the create (a start given up on): its pod may still be created, naming
      // these Secrets. Release them only once the create has settled and its pod is gone again,
      // so no pod is ever created naming a Secret being deleted.
      void creating.then(async () => {
        await this.#removals.run(() => this.#removePod()).catch(() => undefined);
        await this.#releaseSecrets().catch(() => undefined);
      });
      return;
    }
    await this.#releaseSecrets();
  }

  async #releaseSecrets(): Promise<void> {
    const secrets = this.#secrets;
    this.#secrets = [];
    for (const secret of secrets) await this.#images.secrets.release(secret, this.#id);
  }

  async #removePod(): Promise<void> {
    const { core, namespace } = this.#cluster;
    // Teardown means gone: followed from before the delete, then waited for (bounded) until the API no longer has the pod.
    const unneeded = new AbortController();
    const gone = this.#informer.follow(this.#id, () => undefined, AbortSignal.any([AbortSignal.timeout(GONE_WAIT_MS), unneeded.signal]), { exists: true });
    try {
      await gone.registered;
      await idempotent(() => core.deleteNamespacedPod({ name: this.#id, namespace, gracePeriodSeconds: 0 }));
    } catch (error) {
      unneeded.abort();
      gone.outcome.catch(() => undefined);
      if (statusOf(error) === 404) return;
      throw mapApiError(error, this.#ctx('teardown')) ?? error;
    }
    await gone.outcome.catch(() => undefined);
  }

  async spawn(request: ProcessRequest): Promise<SandboxProcess> {
    // The exec subresource has no user: the kit's launcher switches users inside the pod.
    return spawnExec(this.#cluster, this.#id, request);
  }

  mapError(error: unknown, operation: Operation) {
    return mapApiError(error, this.#ctx(operation), { podGone: true });
  }
}
