import { setTimeout as sleep } from 'node:timers/promises';
import { Watch, type V1Pod } from '@kubernetes/client-node';
import { LABEL_MANAGED, LABEL_SESSION, SESSION_ID } from '@berth/core/backend-kit';
import type { Cluster } from './cluster.js';
import { idempotent, statusOf } from './k8s-errors.js';

/** The server ends each watch after this long (the next resumes where it ended), so none lives forever. */
const WATCH_SECONDS = 60;
/** Nothing at all (not even a bookmark) for this long: the connection is presumed dead. */
const SILENT_MS = 90_000;
/** Waits between watches that failed in a row: 0.2 s doubling to 5 s. */
const RETRY_MS = [200, 400, 800, 1600, 3200, 5000];
/** Watches that fail in a row before every waiter is told the last failure. */
const MAX_FAILURES = 8;
/** With no waiter for this long the watch is closed; the next waiter opens it again. */
const IDLE_MS = 20_000;
/** Page size of the relist after an expired watch. */
const PAGE = 500;

/** What a waiter is waiting for: its decision, or the pod gone. */
export type WatchOutcome<T> = { decided: T } | { gone: true };

interface Waiter {
  /** Fed every state of its pod, in order; true once it settled. */
  feed(pod: V1Pod): boolean;
  gone(): void;
  fail(error: unknown): void;
  /** The resourceVersion of the last state fed (numeric where the server's are), to drop older ones. */
  seen: number;
  /** Its pod is known to exist (a state was seen, or the caller says it made it): absent from a relist means gone. */
  exists: boolean;
}

/**
 * One watch over this process's pods (berth's session label) for a whole backend instance, instead
 * of one watch (and one connection) per start: at 10,000 starts that is one connection rather than
 * 10,000. A waiter registers before it creates or deletes its pod; the watch began before that (from
 * a resourceVersion read first), so the pod's every change after the request reaches it. A watch
 * that ends, drops or goes silent is resumed from the last resourceVersion; one that expired (410)
 * relists this session's pods, page by page, and feeds each waiter its pod's state (or its absence).
 */
export class PodInformer {
  readonly #cluster: () => Cluster;
  readonly #waiters = new Map<string, Set<Waiter>>();
  /** Resolves once a watch position (resourceVersion) is known: from then on no change is missed. */
  #running: Promise<void> | undefined;
  #resourceVersion: string | undefined;
  #stop: AbortController | undefined;
  #idle: NodeJS.Timeout | undefined;

  constructor(cluster: () => Cluster) {
    this.#cluster = cluster;
  }

  get #selector(): string {
    return `${LABEL_MANAGED}=true,${LABEL_SESSION}=${SESSION_ID}`;
  }

  /** Waiters registered now (for tests and telemetry). */
  get waiting(): number {
    let n = 0;
    for (const set of this.#waiters.values()) n += set.size;
    return n;
  }

  /**
   * Follow pod `name` until `decide` returns a value for one of its states, or the pod is gone.
   * `read`: decide on its current state first (one GET), for a pod that may already be where the
   * caller waits for it; without it only changes after this call count (a create or delete that
   * follows). `registered` resolves once no change can be missed: send the request after it. A pod
   * is only taken for gone when missing from a relist once it is known to exist: say `exists` (or
   * call `exists()` once the create returned); until then its create may still be on its way.
   */
  follow<T>(
    name: string,
    decide: (pod: V1Pod) => T | undefined,
    signal: AbortSignal,
    opts: { read?: boolean; exists?: boolean } = {},
  ): { registered: Promise<void>; outcome: Promise<WatchOutcome<T>>; exists(): void } {
    let settle!: (outcome: WatchOutcome<T>) => void;
    let reject!: (error: unknown) => void;
    const outcome = new Promise<WatchOutcome<T>>((res, rej) => {
      settle = res;
      reject = rej;
    });
    // Its failure is the caller's when it awaits it, not an unhandled rejection before it does.
    outcome.catch(() => undefined);
    let done = false;
    const finish = (then: () => void) => {
      if (done) return;
      done = true;
      signal.removeEventListener('abort', onAbort);
      this.#remove(name, waiter);
      then();
    };
    const waiter: Waiter = {
      seen: -1,
      exists: opts.exists === true,
      feed: (pod) => {
        if (done) return true;
        waiter.exists = true;
        const version = numericVersion(pod);
        if (version !== undefined) {
          if (version <= waiter.seen) return false;
          waiter.seen = version;
        }
        const decided = decide(pod);
        if (decided === undefined) return false;
        finish(() => settle({ decided }));
        return true;
      },
      gone: () => finish(() => settle({ gone: true })),
      fail: (error) => finish(() => reject(error)),
    };
    const onAbort = () => waiter.fail(signal.reason);
    if (signal.aborted) {
      waiter.fail(signal.reason);
      return { registered: Promise.resolve(), outcome, exists: () => undefined };
    }
    signal.addEventListener('abort', onAbort, { once: true });
    let set = this.#waiters.get(name);
    if (!set) this.#waiters.set(name, (set = new Set()));
    set.add(waiter);
    clearTimeout(this.#idle);
    const registered = this.#ensureRunning();
    registered.catch((error: unknown) => waiter.fail(error));
    if (opts.read) {
      void registered
        .then(() => idempotent(() => this.#cluster().core.readNamespacedPod({ name, namespace: this.#cluster().namespace }), signal))
        .then(
          (pod) => waiter.feed(pod),
          (error: unknown) => (statusOf(error) === 404 ? waiter.gone() : waiter.fail(error)),
        );
    }
    return {
      registered: registered.catch(() => undefined),
      outcome,
      exists: () => {
        waiter.exists = true;
      },
    };
  }

  /** Closes the watch (a backend instance being dropped); waiters are told it failed. */
  close(): void {
    clearTimeout(this.#idle);
    if (this.#stop) this.#end(this.#stop, new Error('the pod watch was closed'));
  }

  #remove(name: string, waiter: Waiter): void {
    const set = this.#waiters.get(name);
    if (!set) return;
    set.delete(waiter);
    if (set.size === 0) this.#waiters.delete(name);
    if (this.#waiters.size === 0 && this.#running) {
      clearTimeout(this.#idle);
      this.#idle = setTimeout(() => {
        if (this.#waiters.size === 0 && this.#stop) this.#end(this.#stop, new Error('the pod watch was closed'));
      }, IDLE_MS);
      this.#idle.unref();
    }
  }

  #ensureRunning(): Promise<void> {
    if (this.#running) return this.#running;
    const stop = new AbortController();
    this.#stop = stop;
    const started = this.#startPosition(stop.signal);
    this.#running = started;
    started.then(
      () => void this.#loop(stop),
      (error: unknown) => this.#end(stop, error),
    );
    return started;
  }

  /** Where the watch starts: the list's resourceVersion (one item asked for: cheap at any size). */
  async #startPosition(signal: AbortSignal): Promise<void> {
    const { core, namespace } = this.#cluster();
    const list = await idempotent(() => core.listNamespacedPod({ namespace, labelSelector: this.#selector, limit: 1 }), signal);
    this.#resourceVersion = list.metadata?.resourceVersion ?? '0';
  }

  /** Watches until stopped; on too many failures in a row every waiter gets the last one. */
  async #loop(controller: AbortController): Promise<void> {
    const stop = controller.signal;
    let failures = 0;
    while (!stop.aborted) {
      const segment = await this.#segment(stop);
      if (stop.aborted) break;
      if (segment === 'ended') {
        failures = 0;
        continue;
      }
      if (segment === 'expired') {
        try {
          await this.#relist(stop);
          failures = 0;
          continue;
        } catch (error) {
          if (stop.aborted) break;
          if (++failures >= MAX_FAILURES) return this.#end(controller, error);
          await sleep(RETRY_MS[Math.min(failures, RETRY_MS.length) - 1]).catch(() => undefined);
          continue;
        }
      }
      // A watch the API refused (403, 404 on the path...) will not get better by asking again.
      const status = statusOf(segment.failed);
      if ((status !== undefined && status < 500 && status !== 429) || ++failures >= MAX_FAILURES) return this.#end(controller, segment.failed);
      await sleep(RETRY_MS[Math.min(failures, RETRY_MS.length) - 1]).catch(() => undefined);
    }
  }

  /** Stopped (idle) or failed for good: the next waiter starts afresh. */
  #end(stop: AbortController, error: unknown): void {
    if (this.#stop !== stop) return;
    stop.abort();
    this.#running = undefined;
    this.#stop = undefined;
    for (const set of [...this.#waiters.values()]) for (const waiter of [...set]) waiter.fail(error);
  }

  /** After an expired watch: each waiter's pod as it is now (absent: gone), and a new position. */
  async #relist(stop: AbortSignal): Promise<void> {
    const { core, namespace } = this.#cluster();
    // Only those whose pod existed before the list may be told it is gone: another's create may be on its way.
    const before = new Set([...this.#waiters.values()].flatMap((set) => [...set].filter((w) => w.exists)));
    const found = new Map<string, V1Pod>();
    let _continue: string | undefined;
    let version = '0';
    do {
      const page = await idempotent(
        () => core.listNamespacedPod({ namespace, labelSelector: this.#selector, limit: PAGE, ...(_continue ? { _continue } : {}) }),
        stop,
      );
      for (const pod of page.items) if (this.#waiters.has(pod.metadata?.name ?? '')) found.set(pod.metadata!.name!, pod);
      version = page.metadata?.resourceVersion ?? version;
      _continue = page.metadata?._continue || undefined;
    } while (_continue);
    this.#resourceVersion = version;
    for (const [name, set] of [...this.#waiters]) {
      const pod = found.get(name);
      for (const waiter of [...set]) {
        if (pod) waiter.feed(pod);
        else if (before.has(waiter)) waiter.gone();
      }
    }
  }

  /** One watch request, from the current position until it ends, fails or expires. */
  #segment(stop: AbortSignal): Promise<'ended' | 'expired' | { failed: unknown }> {
    const cluster = this.#cluster();
    return new Promise((resolve) => {
      let controller: AbortController | undefined;
      let settled = false;
      const finish = (result: 'ended' | 'expired' | { failed: unknown }) => {
        if (settled) return;
        settled = true;
        clearTimeout(silence);
        stop.removeEventListener('abort', onStop);
        controller?.abort();
        resolve(result);
      };
      const onStop = () => finish('ended');
      let silence = setTimeout(() => finish('ended'), SILENT_MS);
      stop.addEventListener('abort', onStop, { once: true });
      const onEvent = (type: string, object: { metadata?: { name?: string; resourceVersion?: string }; code?: number }) => {
        clearTimeout(silence);
        silence = setTimeout(() => finish('ended'), SILENT_MS);
        if (type === 'ERROR') {
          if (object.code === 410) return finish('expired');
          return finish({ failed: Object.assign(new Error(`the pod watch failed: ${JSON.stringify(object).slice(0, 300)}`), { statusCode: object.code }) });
        }
        this.#resourceVersion = object.metadata?.resourceVersion ?? this.#resourceVersion;
        if (type === 'BOOKMARK') return;
        const set = this.#waiters.get(object.metadata?.name ?? '');
        if (!set) return;
        for (const waiter of [...set]) type === 'DELETED' ? waiter.gone() : waiter.feed(object as V1Pod);
      };
      const onDone = (error: unknown) => {
        if (statusOf(error) === 410) return finish('expired');
        finish(error ? { failed: error } : 'ended');
      };
      new Watch(cluster.kc)
        .watch(
          `/api/v1/namespaces/${encodeURIComponent(cluster.namespace)}/pods`,
          { labelSelector: this.#selector, resourceVersion: this.#resourceVersion, allowWatchBookmarks: true, timeoutSeconds: WATCH_SECONDS },
          onEvent,
          onDone,
        )
        .then(
          (c) => {
            controller = c;
            if (settled) c.abort();
          },
          (error: unknown) => onDone(error),
        );
    });
  }
}

/** A resourceVersion as a number where it is one (etcd's are); undefined where it is opaque. */
function numericVersion(pod: V1Pod): number | undefined {
  const v = pod.metadata?.resourceVersion;
  if (!v || !/^\d+$/.test(v)) return undefined;
  return Number(v);
}
