// Sandboxes as real containers: SandboxCreate answers at once and the container starts behind it
// (SandboxGetTaskId waits for it), the sandbox ends when its entrypoint exits, its timeout passes,
// it is terminated, or a fault ends it; an ended sandbox's container is removed straight away.
// V1 and V2 sandboxes (SandboxCreate / SandboxCreateV2) live side by side; each family of RPCs
// serves only its own (sandbox-ids.ts says why).
import type Docker from 'dockerode';
import type { Msg } from './codec.js';
import { Code, RpcError, type CallContext } from './grpc-server.js';
import { createdNetwork, prepareNetwork, releaseNetwork, settleNetwork } from './network.js';
import { newSandboxId, notFound, type SandboxVersion } from './sandbox-ids.js';
import { containerSpec, GPU_TYPES } from './container-spec.js';
import type { SandboxDeps, SandboxRecord } from './sandbox-record.js';

export type { SandboxDeps, SandboxRecord };
import { SandboxStdio } from './sandbox-stdio.js';
import { Changes, engineMessage, newId, sleep, Status, waitFor, type GenericResult } from './util.js';

export interface CreateOptions {
  version?: SandboxVersion;
  /** KEY=value entries from V2 secret_sources, already resolved. */
  sourceEnv?: string[];
}

const FETCH_SPEC = 'FetchSpec failed: loading container: file does not exist';
/** Modal's default sandbox lifetime when timeout_secs is not given. */
export const DEFAULT_TIMEOUT_SECS = 300;

export class Sandboxes {
  readonly #byId = new Map<string, SandboxRecord>();
  readonly #byTask = new Map<string, SandboxRecord>();
  readonly #work = new Set<Promise<unknown>>();
  #lastCreatedAt = 0;

  constructor(readonly deps: SandboxDeps) {}

  #track<T>(p: Promise<T>): Promise<T> {
    const tracked = p.finally(() => this.#work.delete(tracked));
    this.#work.add(tracked);
    return tracked;
  }

  /** A sandbox by id; with `version`, only one created by that family of RPCs. */
  get(id: string, version?: SandboxVersion): SandboxRecord {
    const record = this.#byId.get(id);
    if (!record || record.vanished) throw new RpcError(Code.NOT_FOUND, `Sandbox ${id} not found`);
    if (version !== undefined && record.version !== version) throw notFound(id, record.version);
    return record;
  }

  /** For the router: the running sandbox a task belongs to (or, with `ended`, one that has ended too). */
  byTask(taskId: string, opts: { ended?: boolean; version?: SandboxVersion } = {}): SandboxRecord {
    const record = this.#byTask.get(taskId);
    if (!record) throw new RpcError(Code.NOT_FOUND, `Task ${taskId} not found`);
    if (opts.version !== undefined && record.version !== opts.version) throw new RpcError(Code.NOT_FOUND, `Task ${taskId} not found`);
    if (record.vanished || (!opts.ended && (record.state !== 'running' || record.ending)))
      throw new RpcError(Code.NOT_FOUND, 'The Sandbox is unavailable: it has finished or was removed');
    return record;
  }

  /** Every sandbox not forgotten by a fault (for listing). */
  all(): SandboxRecord[] {
    return [...this.#byId.values()].filter((r) => !r.vanished);
  }

  /** The definition a sandbox was created with, as received (for tests to read back). */
  definition(id: string): Msg | undefined {
    return this.#byId.get(id)?.definition;
  }

  /** How many calls wait on this sandbox's next change (long polls parked on it). */
  waiting(id: string): number {
    return this.#byId.get(id)?.changes.waiting ?? 0;
  }

  network(id: string): { access: Msg; attached: boolean } | undefined {
    const n = this.#byId.get(id)?.network;
    return n && { access: n.access, attached: n.attached };
  }

  live(): string[] {
    return [...this.#byId.values()].filter((r) => !r.vanished && !r.ending).map((r) => r.id);
  }

  create(req: Msg, fetchSpecFailure: boolean, opts: CreateOptions = {}): Msg {
    const appId = String(req.app_id ?? '');
    if (!this.deps.appExists(appId)) throw new RpcError(Code.NOT_FOUND, `App ${appId} not found`);
    const def = (req.definition ?? {}) as Msg;
    const imageId = String(def.image_id ?? '');
    const image = this.deps.images.get(imageId);
    if (!image) throw new RpcError(Code.NOT_FOUND, `Image ${imageId} not found`);
    if (image.state === 'failure') throw new RpcError(Code.FAILED_PRECONDITION, `Image ${imageId} failed to build`);
    for (const s of (def.secret_ids ?? []) as string[]) if (!this.deps.secretEnv(s)) throw new RpcError(Code.NOT_FOUND, `Secret ${s} not found`);
    const gpu = ((def.resources ?? {}) as Msg).gpu_config as Msg | undefined;
    if (Number(gpu?.count ?? 0) > 0 && !GPU_TYPES.has(String(gpu?.gpu_type ?? ''))) {
      throw new RpcError(Code.INVALID_ARGUMENT, `Not a valid GPU type: ${JSON.stringify(gpu?.gpu_type ?? '')}`);
    }
    const network = createdNetwork(def);
    const name = typeof def.name === 'string' && def.name ? def.name : undefined;
    if (name && [...this.#byId.values()].some((r) => r.appId === appId && r.name === name && !r.vanished && !r.ending)) {
      throw new RpcError(Code.ALREADY_EXISTS, `Sandbox with name '${name}' already exists in app ${appId}`);
    }
    // Strictly increasing, so SandboxList's before_timestamp pages cleanly.
    this.#lastCreatedAt = Math.max(Date.now() / 1000, this.#lastCreatedAt + 0.001);
    const version = opts.version ?? 1;
    const record: SandboxRecord = {
      id: newSandboxId(version),
      version,
      appId,
      ...(name ? { name } : {}),
      tags: ((req.tags ?? []) as Msg[]).map((t) => ({ tag_name: String(t.tag_name ?? ''), tag_value: String(t.tag_value ?? '') })),
      imageId,
      definition: def,
      network,
      createdAt: this.#lastCreatedAt,
      state: 'pending',
      vanished: false,
      changes: new Changes(),
      timers: [],
      lastActivity: Date.now(),
      execs: new Map(),
      procs: [],
      sourceEnv: opts.sourceEnv ?? [],
    };
    this.#byId.set(record.id, record);
    if (fetchSpecFailure) void this.#end(record, { status: Status.INIT_FAILURE, exception: FETCH_SPEC });
    else void this.#track(this.#start(record));
    return { sandbox_id: record.id };
  }

  async #start(record: SandboxRecord): Promise<void> {
    const def = record.definition;
    const timeoutSecs = Number(def.timeout_secs ?? 0) || DEFAULT_TIMEOUT_SECS;
    record.timers.push(
      setTimeout(() => void this.#end(record, { status: Status.TIMEOUT, exception: `Sandbox timed out after ${timeoutSecs}s` }), timeoutSecs * 1000),
    );
    const idle = Number(def.idle_timeout_secs ?? 0);
    if (idle > 0) {
      record.timers.push(
        setInterval(() => {
          const busy = record.procs.some((p) => !p.exit);
          if (record.state === 'running' && !busy && Date.now() - record.lastActivity > idle * 1000)
            void this.#end(record, { status: Status.IDLE_TIMEOUT, exception: `Sandbox was idle for ${idle}s` });
        }, 250),
      );
    }
    const ended = () => record.ending !== undefined;
    try {
      const image = this.deps.images.get(record.imageId);
      // A sandbox on an image still building waits for the build, as on Modal.
      while (image?.state === 'building' && !ended()) await Promise.race([image.changes.next(), record.changes.next()]);
      if (ended()) return;
      if (image?.state !== 'success')
        return void this.#end(record, { status: Status.INIT_FAILURE, exception: image?.result?.exception ?? `Image ${record.imageId} is unavailable` });
      const i6pn = record.network.i6pn ? await this.deps.i6pn.allocate() : undefined;
      const container = await this.deps.docker.createContainer(
        containerSpec(record, { image: image.dockerRef, env: image.env, workdir: image.workdir }, timeoutSecs, this.deps, i6pn),
      );
      record.container = container;
      if (i6pn) await this.deps.i6pn.attach(container, i6pn);
      if (ended()) return void this.#remove(record);
      if (record.version === 2) record.stdio = await SandboxStdio.attach(container);
      await prepareNetwork(this.deps.docker, container, record.network);
      await container.start();
      await settleNetwork(this.deps.docker, container, record.network, this.deps.labels(record.id));
      if (ended()) return void this.#remove(record);
      record.taskId = newId('ta');
      record.startedAt = Date.now() / 1000;
      record.state = 'running';
      record.lastActivity = Date.now();
      this.#byTask.set(record.taskId, record);
      record.changes.notify();
      void this.#track(this.#watch(record, container));
    } catch (error) {
      void this.#end(record, { status: Status.INIT_FAILURE, exception: `the sandbox could not start: ${engineMessage(error)}` });
    }
  }

  /** The container stopped without the simulator stopping it: its entrypoint exited or it was killed. */
  async #watch(record: SandboxRecord, container: Docker.Container): Promise<void> {
    const exit = (await container.wait().catch(() => undefined)) as { StatusCode?: number } | undefined;
    if (record.ending || exit?.StatusCode === undefined) return;
    // The last output may still be on its way from the engine: removal would cut it off.
    await record.stdio?.drained(1000);
    const code = exit.StatusCode;
    const oom = await container.inspect().then(
      (i) => i.State.OOMKilled,
      () => false,
    );
    if (code === 0) return void this.#end(record, { status: Status.SUCCESS });
    if (code > 128 && this.deps.killsAs() === 'INTERNAL_FAILURE')
      return void this.#end(record, { status: Status.INTERNAL_FAILURE, exception: `the sandbox's container was killed (exit code ${code})` });
    void this.#end(record, { status: Status.FAILURE, exitcode: code, ...(oom ? { exception: 'Sandbox ran out of memory (OOM killed)' } : {}) });
  }

  /** Ends the sandbox: the result shows once the container is gone, so no reader sees one left. */
  #end(record: SandboxRecord, result: GenericResult): Promise<void> {
    if (record.ended) return record.ended;
    record.ending = result;
    for (const t of record.timers) clearTimeout(t);
    for (const exec of record.execs.values())
      void exec.then(
        (e) => e.abandon(),
        () => undefined,
      );
    record.ended = this.#remove(record).then(() => {
      record.stdio?.close();
      record.finishedAt = Date.now() / 1000;
      record.state = 'ended';
      record.result = result;
      record.changes.notify();
    });
    return record.ended;
  }

  /** Removes the container once; callers share the one removal. */
  #remove(record: SandboxRecord): Promise<void> {
    const container = record.container;
    if (!container) return Promise.resolve();
    record.removal ??= this.#track(
      Promise.all([container.remove({ force: true }).catch(() => undefined), releaseNetwork(record.network)]).then(() => undefined),
    );
    return record.removal;
  }

  /** Long-poll bound: the request's own timeout (seconds) if given, at most longPollMs and the client's deadline. */
  #until(timeoutSecs: unknown, ctx: CallContext): number {
    const asked = timeoutSecs === undefined ? this.deps.longPollMs() : Number(timeoutSecs) * 1000;
    return Math.min(Date.now() + Math.min(asked, this.deps.longPollMs()), ctx.deadline);
  }

  async #slow(ctx: CallContext): Promise<void> {
    if (this.deps.slowLongPollMs() > 0) await sleep(this.deps.slowLongPollMs(), ctx.signal);
  }

  /**
   * V1 long-polls until the task runs or the sandbox ended, and then gives one or the other. V2
   * (SandboxGetTaskIdV2, which the SDK polls every 0.5 s without a timeout) answers at once, and
   * for an ended sandbox gives its task too: the SDK still needs it to read the output.
   */
  async getTaskId(req: Msg, ctx: CallContext, version: SandboxVersion = 1): Promise<Msg> {
    const record = this.get(String(req.sandbox_id ?? ''), version);
    if (version === 2) {
      this.#check(record);
      if (record.state === 'ended') return { ...(record.taskId ? { task_id: record.taskId } : {}), task_result: record.result };
      return record.state === 'running' && !record.ending ? { task_id: record.taskId } : {};
    }
    await this.#slow(ctx);
    // While it is ending, wait for the result rather than hand out a task about to go.
    const settled = () => record.state === 'ended' || (record.state === 'running' && !record.ending);
    const check = () => {
      this.#check(record);
      return settled() ? true : undefined;
    };
    await waitFor(check, record.changes, this.#until(req.timeout, ctx), ctx.signal);
    if (record.state === 'ended') return { task_result: record.result };
    if (settled()) return { task_id: record.taskId };
    return {};
  }

  async wait(req: Msg, ctx: CallContext, version: SandboxVersion = 1): Promise<Msg> {
    const record = this.get(String(req.sandbox_id ?? ''), version);
    await this.#slow(ctx);
    await waitFor(() => (this.#check(record).state === 'ended' ? true : undefined), record.changes, this.#until(req.timeout ?? 0, ctx), ctx.signal);
    return record.state === 'ended' ? { result: record.result } : {};
  }

  #check(record: SandboxRecord): SandboxRecord {
    if (record.vanished) throw new RpcError(Code.NOT_FOUND, `Sandbox ${record.id} not found`);
    return record;
  }

  async terminate(req: Msg, version: SandboxVersion = 1): Promise<Msg> {
    const record = this.get(String(req.sandbox_id ?? ''), version);
    if (record.state === 'ended') return { existing_result: record.result };
    await this.#end(record, { status: Status.TERMINATED, exception: 'Sandbox was terminated' });
    return {};
  }

  /** Fault: the container goes and the simulator forgets the sandbox. */
  async vanish(id: string): Promise<void> {
    const record = this.get(id);
    record.vanished = true;
    record.changes.notify();
    await this.#end(record, { status: Status.INTERNAL_FAILURE, exception: 'vanished' });
  }

  /** Fault: the container is killed and the sandbox ends as evicted. */
  async evict(id: string): Promise<void> {
    const record = this.get(id);
    await this.#end(record, { status: Status.MEMORY_MANAGER_EVICTION, exception: 'Sandbox was evicted by the memory manager' });
  }

  async close(): Promise<void> {
    for (const record of this.#byId.values()) void this.#end(record, { status: Status.TERMINATED, exception: 'the simulator closed' });
    while (this.#work.size > 0) await Promise.allSettled([...this.#work]);
  }
}
