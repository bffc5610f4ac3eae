// Sandboxes as real containers: SandboxCreate answers at once and the container starts behind it
// (SandboxGetTaskId waits for it), the sandbox ends when its entrypoint exits, its timeout passes,
// it is terminated, or a fault ends it; an ended sandbox's container is removed straight away.
import type Docker from 'dockerode';
import type { Msg } from './codec.js';
import type { ExecProcess } from './exec.js';
import { Code, RpcError, type CallContext } from './grpc-server.js';
import type { Images } from './images.js';
import { createdNetwork, networkMode, settleNetwork, type SandboxNetwork } from './network.js';
import { Changes, engineMessage, newId, sleep, Status, waitFor, type GenericResult } from './util.js';

export interface SandboxRecord {
  id: string;
  appId: string;
  name?: string;
  tags: Array<{ tag_name: string; tag_value: string }>;
  imageId: string;
  definition: Msg;
  /** Its network policy and whether the container is on the bridge (network.ts). */
  network: SandboxNetwork;
  createdAt: number;
  state: 'pending' | 'running' | 'ended';
  taskId?: string;
  container?: Docker.Container;
  result?: GenericResult;
  /** Forgotten by a fault: NOT_FOUND from now on, even for calls already waiting. */
  vanished: boolean;
  changes: Changes;
  timers: NodeJS.Timeout[];
  lastActivity: number;
  execs: Map<string, Promise<ExecProcess>>;
  /** Started execs: one still running keeps an idle timeout away. */
  procs: ExecProcess[];
  removal?: Promise<void>;
  /** Set when the sandbox starts to end; `state` becomes 'ended' once its container is gone. */
  ending?: GenericResult;
  ended?: Promise<void>;
}

export interface SandboxDeps {
  docker: Docker;
  images: Images;
  appExists: (appId: string) => boolean;
  secretEnv: (secretId: string) => Record<string, string> | undefined;
  labels: (simId: string) => Record<string, string>;
  longPollMs: () => number;
  slowLongPollMs: () => number;
  killsAs: () => 'FAILURE' | 'INTERNAL_FAILURE';
  cpus: number;
}

const FETCH_SPEC = 'FetchSpec failed: loading container: file does not exist';
/**
 * GPU types Modal takes (its GPU docs; the type upper-cased as its client sends it). This machine
 * has no GPUs: a sandbox asking for them runs without, its GPU config recorded for tests to read.
 */
const GPU_TYPES = new Set([
  'ANY',
  'T4',
  'L4',
  'A10',
  'A10G',
  'L40S',
  'A100',
  'A100-40GB',
  'A100-80GB',
  'RTX-PRO-6000',
  'H100',
  'H100!',
  'H200',
  'B200',
  'B200+',
]);
/** Modal's default sandbox lifetime when timeout_secs is not given. */
const DEFAULT_TIMEOUT_SECS = 300;

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

  get(id: string): SandboxRecord {
    const record = this.#byId.get(id);
    if (!record || record.vanished) throw new RpcError(Code.NOT_FOUND, `Sandbox ${id} not found`);
    return record;
  }

  /** For the router: the running sandbox a task belongs to. */
  byTask(taskId: string): SandboxRecord {
    const record = this.#byTask.get(taskId);
    if (!record) throw new RpcError(Code.NOT_FOUND, `Task ${taskId} not found`);
    if (record.vanished || record.state !== 'running' || record.ending)
      throw new RpcError(Code.NOT_FOUND, 'The Sandbox is unavailable: it has finished or was removed');
    return record;
  }

  /** The definition a sandbox was created with, as received (for tests to read back). */
  definition(id: string): Msg | undefined {
    return this.#byId.get(id)?.definition;
  }

  network(id: string): { access: Msg; attached: boolean } | undefined {
    const n = this.#byId.get(id)?.network;
    return n && { access: n.access, attached: n.attached };
  }

  live(): string[] {
    return [...this.#byId.values()].filter((r) => !r.vanished && !r.ending).map((r) => r.id);
  }

  create(req: Msg, fetchSpecFailure: boolean): Msg {
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
    const record: SandboxRecord = {
      id: newId('sb'),
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
      const container = await this.deps.docker.createContainer(this.#containerSpec(record, image.dockerRef, image.env, image.workdir, timeoutSecs));
      record.container = container;
      if (ended()) return void this.#remove(record);
      await container.start();
      await settleNetwork(this.deps.docker, container, record.network);
      if (ended()) return void this.#remove(record);
      record.taskId = newId('ta');
      record.state = 'running';
      record.lastActivity = Date.now();
      this.#byTask.set(record.taskId, record);
      record.changes.notify();
      void this.#track(this.#watch(record, container));
    } catch (error) {
      void this.#end(record, { status: Status.INIT_FAILURE, exception: `the sandbox could not start: ${engineMessage(error)}` });
    }
  }

  #containerSpec(
    record: SandboxRecord,
    image: string,
    imageEnv: string[],
    imageWorkdir: string | undefined,
    timeoutSecs: number,
  ): Docker.ContainerCreateOptions {
    const def = record.definition;
    const args = (def.entrypoint_args ?? []) as string[];
    // Without entrypoint_args a Modal sandbox just stays up until its timeout.
    const argv = args.length > 0 ? args : ['sleep', String(timeoutSecs + 60)];
    const resources = (def.resources ?? {}) as Msg;
    const memoryMb = Number(resources.memory_mb_max ?? 0) || Number(resources.memory_mb ?? 0);
    const milliCpu = Math.min(Number(resources.milli_cpu_max ?? 0) || Number(resources.milli_cpu ?? 0), this.deps.cpus * 1000);
    const env = [...imageEnv];
    for (const s of (def.secret_ids ?? []) as string[]) for (const [k, v] of Object.entries(this.deps.secretEnv(s) ?? {})) env.push(`${k}=${v}`);
    const workdir = typeof def.workdir === 'string' && def.workdir ? def.workdir : imageWorkdir;
    return {
      Image: image,
      Entrypoint: argv.slice(0, 1),
      Cmd: argv.slice(1),
      Env: env,
      ...(workdir ? { WorkingDir: workdir } : {}),
      // Berth's labels last: a tag cannot overwrite them.
      Labels: { ...Object.fromEntries(record.tags.map((t) => [`modal.tag.${t.tag_name}`, t.tag_value])), ...this.deps.labels(record.id) },
      Tty: false,
      HostConfig: {
        NetworkMode: networkMode(record.network),
        ...(memoryMb > 0 ? { Memory: memoryMb * 1024 * 1024, MemorySwap: memoryMb * 1024 * 1024 } : {}),
        ...(milliCpu > 0 ? { NanoCpus: milliCpu * 1_000_000 } : {}),
      },
    };
  }

  /** The container stopped without the simulator stopping it: its entrypoint exited or it was killed. */
  async #watch(record: SandboxRecord, container: Docker.Container): Promise<void> {
    const exit = (await container.wait().catch(() => undefined)) as { StatusCode?: number } | undefined;
    if (record.ending || exit?.StatusCode === undefined) return;
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
      container.remove({ force: true }).then(
        () => undefined,
        () => undefined,
      ),
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

  async getTaskId(req: Msg, ctx: CallContext): Promise<Msg> {
    const record = this.get(String(req.sandbox_id ?? ''));
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

  async wait(req: Msg, ctx: CallContext): Promise<Msg> {
    const record = this.get(String(req.sandbox_id ?? ''));
    await this.#slow(ctx);
    await waitFor(() => (this.#check(record).state === 'ended' ? true : undefined), record.changes, this.#until(req.timeout ?? 0, ctx), ctx.signal);
    return record.state === 'ended' ? { result: record.result } : {};
  }

  #check(record: SandboxRecord): SandboxRecord {
    if (record.vanished) throw new RpcError(Code.NOT_FOUND, `Sandbox ${record.id} not found`);
    return record;
  }

  async terminate(req: Msg): Promise<Msg> {
    const record = this.get(String(req.sandbox_id ?? ''));
    if (record.state === 'ended') return { existing_result: record.result };
    await this.#end(record, { status: Status.TERMINATED, exception: 'Sandbox was terminated' });
    return {};
  }

  list(req: Msg): Msg {
    const appId = String(req.app_id ?? '');
    const before = Number(req.before_timestamp ?? 0);
    const wanted = (req.tags ?? []) as Msg[];
    const hits = [...this.#byId.values()]
      .filter((r) => !r.vanished && (!appId || r.appId === appId) && (req.include_finished || !r.ending))
      .filter((r) => !before || r.createdAt < before)
      .filter((r) => wanted.every((w) => r.tags.some((t) => t.tag_name === w.tag_name && t.tag_value === (w.tag_value ?? ''))))
      .sort((a, b) => b.createdAt - a.createdAt)
      .slice(0, 100);
    return {
      sandboxes: hits.map((r) => ({
        id: r.id,
        created_at: r.createdAt,
        app_id: r.appId,
        tags: r.tags,
        image_id: r.imageId,
        timeout_secs: Number(r.definition.timeout_secs ?? 0) || DEFAULT_TIMEOUT_SECS,
        ...(r.name ? { name: r.name } : {}),
        ...(r.definition.idle_timeout_secs !== undefined ? { idle_timeout_secs: r.definition.idle_timeout_secs } : {}),
      })),
    };
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
