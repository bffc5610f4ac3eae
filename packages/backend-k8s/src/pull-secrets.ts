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
 */
export class PullSecrets {
  readonly #cluster: Cluster;
  /** Secret name -> the environments using it. */
  readonly #users = new Map<string, Set<string>>();
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
    const name = `berth-pull-${digest.slice(0, 20)}`;
    return this.#serial(name, async () => {
      const users = this.#users.get(name);
      if (users && users.size > 0) {
        users.add(environmentId);
        return name;
      }
      await this.#create(name, credential, environmentId);
      this.#users.set(name, new Set([environmentId]));
      return name;
    });
  }

  /** The environment no longer needs it; the last one out removes the Secret. */
  release(name: string, environmentId: string): Promise<void> {
    return this.#serial(name, async () => {
      const users = this.#users.get(name);
      if (!users?.delete(environmentId) || users.size > 0) return;
      this.#users.delete(name);
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
      // Left by a removal that failed: the same content, by its name.
      if (statusOf(error) === 409) return;
      throw mapApiError(error, { operation: 'start', environmentId }) ?? error;
    }
  }
}
