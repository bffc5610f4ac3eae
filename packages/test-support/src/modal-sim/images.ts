// ImageGetOrCreate and ImageJoinStreaming: one build per distinct image content, run in the
// background; its logs are numbered entries a client can resume after (last_entry_id), and the
// result comes last.
import { createHash } from 'node:crypto';
import type Docker from 'dockerode';
import type { Msg } from './codec.js';
import { Code, RpcError, type CallContext } from './grpc-server.js';
import { build, BuildError, parseDockerfile, type ContextFiles } from './image-build.js';
import type { Mounts } from './mounts.js';
import type { RegistryAuth } from './pull.js';
import { Changes, newId, sleep, Status, waitFor, type GenericResult } from './util.js';

export const IMAGE_REPO = 'berth-modal-sim';
/** The tag names the owning process, so a later simulator can remove tags a killed one left. */
export const imageTag = (imageId: string) => `p${process.pid}-${imageId}`;

export interface ImageRecord {
  id: string;
  state: 'building' | 'success' | 'failure';
  /** ImageJoinStreamingResponse messages with task_logs; entry_id is the 1-based position. */
  entries: Msg[];
  result?: GenericResult;
  /** What sandboxes run: the simulator's tag of the finished image. */
  dockerRef: string;
  /** The image carries its own ENV; nothing is added here (kept for sandboxes' container spec). */
  env: string[];
  workdir?: string;
  changes: Changes;
}

export interface ImagesDeps {
  docker: Docker;
  mounts: Mounts;
  secretEnv: (secretId: string) => Record<string, string> | undefined;
  labels: (simId: string) => Record<string, string>;
  longPollMs: () => number;
  slowLongPollMs: () => number;
}

export class Images {
  readonly #byId = new Map<string, ImageRecord>();
  readonly #byContent = new Map<string, ImageRecord>();
  readonly #builds = new Set<Promise<void>>();
  /** Snapshots by the client's snapshot id, so a retried TaskSnapshotFilesystem is the same image. */
  readonly #bySnapshot = new Map<string, string>();
  readonly #closing = new AbortController();
  /** Ids differ between simulators, so two of them never share (and remove) each other's tags. */
  readonly #salt = newId('salt');

  constructor(readonly deps: ImagesDeps) {}

  get(id: string): ImageRecord | undefined {
    return this.#byId.get(id);
  }

  getOrCreate(req: Msg): Msg {
    const image = (req.image ?? {}) as Msg;
    const commands = (image.dockerfile_commands ?? []) as string[];
    const registry = (image.image_registry_config ?? {}) as Msg;
    const authType = String(registry.registry_auth_type ?? 'REGISTRY_AUTH_TYPE_UNSPECIFIED');
    const secretId = String(registry.secret_id ?? '');
    const auth = this.#auth(authType, secretId);
    const mountId = String(image.context_mount_id ?? '');
    const files = mountId ? this.deps.mounts.files(mountId) : [];
    const buildArgs = (image.build_args ?? {}) as Record<string, string>;
    const key = createHash('sha256')
      .update(JSON.stringify([this.#salt, commands, authType, secretId, buildArgs]))
      .update(JSON.stringify(files.map((f) => [f.filename, f.mode, createHash('sha256').update(f.data).digest('hex')])))
      .digest('hex');
    const known = this.#byContent.get(key);
    // A failed build is not cached: asking again builds again (under a new id).
    if (known && known.state !== 'failure' && !req.force_build) {
      return { image_id: known.id, ...(known.state === 'success' && known.result ? { result: known.result } : {}) };
    }
    const id = known
      ? newId('im')
      : `im-${BigInt(`0x${key.slice(0, 32)}`)
          .toString(36)
          .slice(0, 22)}`;
    const record: ImageRecord = { id, state: 'building', entries: [], dockerRef: `${IMAGE_REPO}:${imageTag(id)}`, env: [], changes: new Changes() };
    this.#byId.set(id, record);
    this.#byContent.set(key, record);
    const running = this.#build(record, commands, auth, files, buildArgs).finally(() => this.#builds.delete(running));
    this.#builds.add(running);
    return { image_id: id };
  }

  /** Credentials for the pull, or an immediate refusal as Modal gives it. */
  #auth(authType: string, secretId: string): RegistryAuth | undefined {
    if (authType === 'REGISTRY_AUTH_TYPE_UNSPECIFIED' || authType === 'REGISTRY_AUTH_TYPE_PUBLIC') return undefined;
    if (authType !== 'REGISTRY_AUTH_TYPE_STATIC_CREDS')
      throw new RpcError(Code.FAILED_PRECONDITION, `registry auth type ${authType} is unsupported in the simulator`);
    const env = this.deps.secretEnv(secretId);
    if (!env) throw new RpcError(Code.NOT_FOUND, `Secret ${secretId} not found`);
    const missing = ['REGISTRY_USERNAME', 'REGISTRY_PASSWORD'].filter((k) => !env[k]);
    if (missing.length > 0)
      throw new RpcError(Code.FAILED_PRECONDITION, `Secret ${secretId} is missing key(s) ${missing.join(', ')} needed for registry authentication`);
    return { username: env.REGISTRY_USERNAME as string, password: env.REGISTRY_PASSWORD as string };
  }

  async #build(record: ImageRecord, commands: string[], auth: RegistryAuth | undefined, files: ContextFiles, buildArgs: Record<string, string>): Promise<void> {
    const log = (data: string, fd: string) => {
      record.entries.push({ entry_id: String(record.entries.length + 1), task_logs: [{ data, timestamp: Date.now() / 1000, file_descriptor: fd }] });
      record.changes.notify();
    };
    try {
      const dockerfile = parseDockerfile(commands);
      const built = await build(dockerfile, {
        docker: this.deps.docker,
        imageId: record.id,
        tag: { repo: IMAGE_REPO, tag: imageTag(record.id) },
        auth,
        labels: this.deps.labels(record.id),
        files,
        buildArgs,
        log,
        signal: this.#closing.signal,
      });
      if (built.workdir) record.workdir = built.workdir;
      record.state = 'success';
      record.result = { status: Status.SUCCESS };
    } catch (error) {
      const detail = error instanceof BuildError ? error.message : String(error);
      log(`${detail}\n`, 'FILE_DESCRIPTOR_STDERR');
      record.state = 'failure';
      record.result = { status: Status.FAILURE, exception: `Image build for ${record.id} failed with the exception:\n${detail}` };
    }
    record.changes.notify();
  }

  /**
   * Streams entries after last_entry_id, then the result. When the build outlasts `timeout` the
   * stream ends OK without a result and the client calls again with the last entry it saw.
   */
  async join(req: Msg, ctx: CallContext, send: (m: Msg) => Promise<void>): Promise<void> {
    const id = String(req.image_id ?? '');
    const record = this.#byId.get(id);
    if (!record) throw new RpcError(Code.NOT_FOUND, `Image ${id} not found`);
    const slow = this.deps.slowLongPollMs();
    if (slow > 0) await sleep(slow, ctx.signal);
    const timeoutMs = Number(req.timeout ?? 0) > 0 ? Number(req.timeout) * 1000 : this.deps.longPollMs();
    const until = Math.min(Date.now() + Math.min(timeoutMs, this.deps.longPollMs()), ctx.deadline);
    let next = Number.parseInt(String(req.last_entry_id || '0'), 10) || 0;
    // Logs of a build that had finished before this call are only sent when asked for.
    if (record.state !== 'building' && !req.include_logs_for_finished && !req.last_entry_id) next = record.entries.length;
    for (;;) {
      while (next < record.entries.length) await send(record.entries[next++] as Msg);
      if (record.result) {
        await send({ result: record.result, entry_id: String(record.entries.length + 1) });
        return;
      }
      const more = await waitFor(() => (next < record.entries.length || record.result ? true : undefined), record.changes, until, ctx.signal);
      if (!more) return;
    }
  }

  /**
   * TaskSnapshotFilesystem: the sandbox's container committed (paused) under the simulator's tag,
   * an image sandboxes start from by its id. The snapshot id is the client's: a retry gets the same
   * image. Its TTL is not enforced (a simulator lives for one test run).
   */
  async snapshot(container: Docker.Container, snapshotId: string): Promise<string> {
    const known = this.#bySnapshot.get(snapshotId);
    if (known) return known;
    const id = newId('im');
    const tag = imageTag(id);
    await container.commit({ repo: IMAGE_REPO, tag, pause: true });
    const record: ImageRecord = {
      id,
      state: 'success',
      entries: [],
      result: { status: Status.SUCCESS },
      dockerRef: `${IMAGE_REPO}:${tag}`,
      env: [],
      changes: new Changes(),
    };
    this.#byId.set(id, record);
    this.#bySnapshot.set(snapshotId, id);
    return id;
  }

  /** ImageDelete: the image is gone (its tag removed); NOT_FOUND for an id the simulator never had. */
  async delete(req: Msg): Promise<Msg> {
    const id = String(req.image_id ?? '');
    const record = this.#byId.get(id);
    if (!record) throw new RpcError(Code.NOT_FOUND, `Image ${id} not found`);
    this.#byId.delete(id);
    await this.deps.docker
      .getImage(record.dockerRef)
      .remove()
      .catch(() => undefined);
    return {};
  }

  async close(): Promise<void> {
    this.#closing.abort();
    await Promise.allSettled([...this.#builds]);
    for (const record of this.#byId.values()) {
      // By tag and without force: only this tag goes when the image has others (a pulled FROM).
      if (record.state === 'success')
        await this.deps.docker
          .getImage(record.dockerRef)
          .remove()
          .catch(() => undefined);
    }
  }
}
