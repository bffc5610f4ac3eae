import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import { LABEL_CREATED, LABEL_MANAGED, LABEL_OWNER_HOST, LABEL_OWNER_PID, LABEL_SESSION, SESSION_ID, type PullCredential } from '@berth/core/backend-kit';
import type { Cluster } from './cluster.js';
import { idempotent, mapApiError, statusOf } from './k8s-errors.js';

/** Marks the pull secrets berth made (sweep removes those whose process is gone). */
export const LABEL_PULL_SECRET = 'berth.pull-secret';

/**
 * Registry credentials as `kubernetes.io/dockerconfigjson` Secrets: one per distinct credential per
 * backend instance (a 500-pod run makes one), removed when the last pod using it is torn down. A
 * process that dies leaves it labelled with its pid, for `sweep()`.
 *
 * Per instance rather than shared across processes: a secret shared by name could be removed by one
 * process while another's pod still waits to pull with it.
 *
 * A name is never used again once its Secret is deleted: when the last user of a credential leaves
 * and a new one comes, the new Secret gets the next generation's name. Reusing the name would let a
 * pod be created naming a Secret that is still being deleted, and the kubelet's watch of that name
 * may still hold the deletion when the pod's pull reads it (an anonymous pull: "unauthorized").
 */
export class PullSecrets {
  readonly #cluster: Cluster;
  /** Secret name -> the environments using it. */
  readonly #users = new Map<string, Set<string>>();
  /** Credential digest -> the name of its Secret now (absent: none exists), and how many it has had. */
  readonly #current = new Map<string, string>();
  readonly #generations = new Map<string, number>();
  /** One operation at a time per secret (create, delete), so a start never races a removal. */
  readonly #queue = new Map<string, Promise<unknown>>();
  readonly #instance = Math.random().toString(36).slice(2, 10);

  constructor(cluster: Cluster) {
    this.#cluster = cluster;
  }

  #serial<T>(name: string, work: () => Promise<T>): Promise<T> {
    const next = (this.#queue.get(name) ?? Promise.resolve()).then(work, work);
    this.#queue.set(
      name,
      next.catch(() => undefined),
    );
    return next;
  }

  /** The Secret holding this credential for `environmentId`'s pod, made if none is in use. */
  acquire(credential: PullCredential, environmentId: string): Promise<string> {
    const secret = 'identityToken' in credential ? credential.identityToken : `${credential.username}\0${credential.password}`;
    const digest = createHash('sha256').update(`${SESSION_ID}\0${this.#instance}\0${credential.serverAddress}\0${secret}`).digest('hex');
    const key = digest.slice(0, 20);
    return this.#serial(key, async () => {
      const existing = this.#current.get(key);
      if (existing !== undefined) {
        this.#users.get(existing)?.add(environmentId);
        return existing;
      }
      const generation = (this.#generations.get(key) ?? 0) + 1;
      this.#generations.set(key, generation);
      const name = `berth-pull-${key}-${generation}`;
      await this.#create(name, credential, environmentId);
      this.#current.set(key, name);
      this.#users.set(name, new Set([environmentId]));
      return name;
    });
  }

  /** The environment no longer needs it; the last one out removes the Secret. */
  release(name: string, environmentId: string): Promise<void> {
    const key = keyOf(name);
    return this.#serial(key, async () => {
      const users = this.#users.get(name);
      if (!users?.delete(environmentId) || users.size > 0) return;
      this.#users.delete(name);
      // From here a new user gets a new Secret (the next generation), never this name.
      if (this.#current.get(key) === name) this.#current.delete(key);
      try {
        await idempotent(() => this.#cluster.core.deleteNamespacedSecret({ name, namespace: this.#cluster.namespace }));
      } catch (error) {
        if (statusOf(error) !== 404) throw mapApiError(error, { operation: 'teardown', environmentId }) ?? error;
      }
    });
  }

  async #create(name: string, credential: PullCredential, environmentId: string): Promise<void> {
    const entry =
      'identityToken' in credential
        ? { identitytoken: credential.identityToken }
        : {
            username: credential.username,
            password: credential.password,
            auth: Buffer.from(`${credential.username}:${credential.password}`).toString('base64'),
          };
    const config = JSON.stringify({ auths: { [credential.serverAddress]: entry } });
    const labels = {
      [LABEL_MANAGED]: 'true',
      [LABEL_SESSION]: SESSION_ID,
      [LABEL_PULL_SECRET]: 'true',
      [LABEL_CREATED]: String(Date.now()),
      [LABEL_OWNER_PID]: String(process.pid),
      [LABEL_OWNER_HOST]: hostname(),
    };
    try {
      // A named object: a retried create that already got through answers 409, handled below.
      await idempotent(() =>
        this.#cluster.core.createNamespacedSecret({
          namespace: this.#cluster.namespace,
          body: { metadata: { name, labels }, type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': Buffer.from(config).toString('base64') } },
        }),
      );
    } catch (error) {
      // An earlier try of this create got through (names are per generation, never reused).
      if (statusOf(error) === 409) return;
      throw mapApiError(error, { operation: 'start', environmentId }) ?? error;
    }
  }
}

/** `berth-pull-<key>-<generation>` -> key. */
function keyOf(name: string): string {
  return name.slice('berth-pull-'.length, name.lastIndexOf('-'));
}

/** Which of the namespace's pull secrets a pod names do not exist (a typo, or never made). */
export async function missingSecrets(cluster: Cluster, names: readonly string[]): Promise<string[]> {
  const missing: string[] = [];
  for (const name of names) {
    try {
      await idempotent(() => cluster.core.readNamespacedSecret({ name, namespace: cluster.namespace }));
    } catch (error) {
      if (statusOf(error) !== 404) throw error;
      missing.push(name);
    }
  }
  return missing;
}
