// A Modal stand-in for tests: the ModalClient and TaskCommandRouter gRPC services over HTTP/2 + TLS
// on 127.0.0.1, backed by real containers on the local Docker engine, with faults on demand.
import { randomBytes } from 'node:crypto';
import Docker from 'dockerode';
import { testCa } from '../test-ca.js';
import { AuthTokens } from './auth-tokens.js';
import { checkClientVersion } from './client-version.js';
import { SimCodec, type Msg } from './codec.js';
import { checkToken, controlPlaneMethods, type Secret } from './control-plane.js';
import { Faults } from './faults.js';
import { GrpcServer, type CallRecord, type Method } from './grpc-server.js';
import { Images } from './images.js';
import { Mounts } from './mounts.js';
import { routerMethods } from './router.js';
import { RouterTokens } from './router-tokens.js';
import { Sandboxes } from './sandboxes.js';
import { sweepOrphans } from './sweep.js';
import { newId } from './util.js';

import { I6pnNetwork } from './i6pn.js';
export { Code, RpcError, type CallRecord } from './grpc-server.js';
export { SimCodec, type Msg } from './codec.js';
export { IMAGE_REPO, imageTag } from './images.js';
export { sandboxVersionOf } from './sandbox-ids.js';

/** The label every container the simulator makes carries (value: the sandbox or image id). */
export const SIM_LABEL = 'berth.modal-sim';
/** Scopes one simulator's containers, so close() removes its own and no one else's. */
const INSTANCE_LABEL = 'berth.modal-sim-instance';

export interface ModalSimulatorOptions {
  docker?: Docker;
  /** Longest a long poll (SandboxWait, SandboxGetTaskId, TaskExecWait, ImageJoinStreaming) holds; default 55 s. */
  longPollMs?: number;
  /** Serve the router on its own origin (another port) instead of the control plane's. */
  separateRouter?: boolean;
  /** Lifetime of router JWTs (their `exp`); default 3600 s. */
  routerJwtTtlSecs?: number;
  /** Lifetime of AuthTokenGet's tokens (x-modal-auth-token, needed by V2 RPCs); default 3600 s. */
  authTokenTtlSecs?: number;
  /** EnvironmentSettings.image_builder_version (and ClientHello's); default "2025.06". */
  imageBuilderVersion?: string;
  /** Clients older than this (x-modal-client-version) are refused: FAILED_PRECONDITION (faults.requireClientVersion). */
  minimumClientVersion?: string;
}

export class ModalSimulator {
  readonly tokenId = `ak-${randomBytes(8).toString('hex')}`;
  readonly tokenSecret = `as-${randomBytes(16).toString('hex')}`;
  readonly ca: string;
  /** Every call served, in the order they finished. */
  readonly calls: CallRecord[] = [];
  readonly faults: Faults;
  /** Build-context files put and mounted (MountPutFile, MountGetOrCreate). */
  readonly mounts = new Mounts();
  readonly docker: Docker;
  /** The simulator's own codec (tests may use it to build raw calls). */
  readonly codec = SimCodec.forSimulator();
  readonly #instance = randomBytes(6).toString('hex');
  readonly #i6pn: I6pnNetwork;
  readonly #secrets = new Map<string, Secret>();
  readonly #apps = new Map<string, string>();
  readonly #tokens: RouterTokens;
  readonly #authTokens: AuthTokens;
  readonly #imageBuilderVersion: string;
  readonly #images: Images;
  readonly #sandboxes: Sandboxes;
  #servers: GrpcServer[] = [];
  #longPollMs: number;
  #closed?: Promise<void>;

  private constructor(opts: ModalSimulatorOptions, cpus: number) {
    this.docker = opts.docker ?? new Docker();
    this.ca = testCa().ca;
    this.#longPollMs = opts.longPollMs ?? 55_000;
    this.#tokens = new RouterTokens(opts.routerJwtTtlSecs ?? 3600);
    this.#authTokens = new AuthTokens(opts.authTokenTtlSecs ?? 3600);
    this.#imageBuilderVersion = opts.imageBuilderVersion ?? '2025.06';
    this.faults = new Faults({
      vanish: (id) => this.#sandboxes.vanish(id),
      evict: (id) => this.#sandboxes.evict(id),
      expireRouterJwts: () => this.#tokens.expireAll(),
      expireAuthTokens: () => this.#authTokens.expireAll(),
      resetConnections: (mode) => this.#servers.reduce((hit, server) => hit + (mode === 'rst' ? server.resetStreams() : server.goaway()), 0),
    });
    this.#i6pn = new I6pnNetwork(this.docker, this.#instance, this.#labels('i6pn'));
    const secretEnv = (id: string) => this.#secrets.get(id)?.env;
    const labels = (simId: string) => this.#labels(simId);
    const longPollMs = () => this.#longPollMs;
    const slowLongPollMs = () => this.faults.slowLongPollMs;
    this.#images = new Images({ docker: this.docker, mounts: this.mounts, secretEnv, labels, longPollMs, slowLongPollMs });
    this.#sandboxes = new Sandboxes({
      docker: this.docker,
      images: this.#images,
      appExists: (id) => [...this.#apps.values()].includes(id),
      secretEnv,
      labels,
      longPollMs,
      slowLongPollMs,
      killsAs: () => this.faults.killsAs,
      cpus,
      i6pn: this.#i6pn,
    });
    if (opts.minimumClientVersion !== undefined) this.faults.requireClientVersion(opts.minimumClientVersion);
  }

  static async start(opts: ModalSimulatorOptions = {}): Promise<ModalSimulator> {
    const docker = opts.docker ?? new Docker();
    const info = (await docker.info()) as { NCPU?: number };
    await sweepOrphans(docker, SIM_LABEL);
    const sim = new ModalSimulator({ ...opts, docker }, info.NCPU ?? 1);
    await sim.#listen(opts.separateRouter ?? false);
    return sim;
  }

  /**
   * What createModalBackend needs to reach this simulator: its server, CA and token, registries
   * probed on loopback only, and no Modal variables read from the environment.
   */
  clientOptions() {
    return {
      serverUrl: this.url,
      ca: this.ca,
      tokenId: this.tokenId,
      tokenSecret: this.tokenSecret,
      probeRegistries: ['127.0.0.1:5000'],
      modalConfigEnv: {},
    };
  }

  /** The control plane's origin (https://127.0.0.1:<port>). */
  get url(): string {
    return this.#servers[0]?.url ?? '';
  }

  /** Where TaskGetCommandRouterAccess sends clients: the control plane's origin unless separateRouter. */
  get routerUrl(): string {
    return this.#servers[1]?.url ?? this.url;
  }

  /** A named secret that SecretGetOrCreate{deployment_name} finds. */
  addSecret(name: string, env: Record<string, string>): void {
    for (const [id, s] of this.#secrets) if (s.name === name) this.#secrets.delete(id);
    const id = newId('st');
    this.#secrets.set(id, { id, name, env: { ...env } });
  }

  /** Connections accepted so far, on every origin: a client that reconnected after a GOAWAY shows here. */
  get sessionsOpened(): number {
    return this.#servers.reduce((n, server) => n + server.sessionsOpened, 0);
  }

  /** How many auth tokens AuthTokenGet has handed out (clients cache them). */
  get authTokensIssued(): number {
    return this.#authTokens.issuedCount;
  }

  /** Ids of sandboxes that have not ended. */
  async sandboxes(): Promise<string[]> {
    return this.#sandboxes.live();
  }

  /** The Sandbox definition SandboxCreate received for this sandbox, decoded. */
  definition(sandboxId: string): Msg | undefined {
    return this.#sandboxes.definition(sandboxId);
  }

  /** How many calls (SandboxWait, SandboxGetTaskId long polls) are parked waiting on this sandbox now. */
  waitingOn(sandboxId: string): number {
    return this.#sandboxes.waiting(sandboxId);
  }

  /** The network policy a sandbox has now (its last TaskSetNetworkAccess, else its definition's) and whether it is on the bridge. */
  network(sandboxId: string): { access: Msg; attached: boolean } | undefined {
    return this.#sandboxes.network(sandboxId);
  }

  /** Changes the long-poll bound while running. */
  set longPollMs(ms: number) {
    this.#longPollMs = ms;
  }

  get longPollMs(): number {
    return this.#longPollMs;
  }

  /** Stops serving, ends every sandbox and removes every container and image tag it made. */
  close(): Promise<void> {
    this.#closed ??= this.#close();
    return this.#closed;
  }

  async #close(): Promise<void> {
    await Promise.all(this.#servers.map((s) => s.close()));
    await this.#sandboxes.close();
    await this.#images.close();
    // Whatever a crash in the middle of a create may have left.
    const left = await this.docker.listContainers({ all: true, filters: { label: [`${INSTANCE_LABEL}=${this.#instance}`] } });
    for (const c of left)
      await this.docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => undefined);
    await this.#i6pn.close();
  }

  #labels(simId: string): Record<string, string> {
    return {
      'berth.managed': 'true',
      'berth.session': process.env.BERTH_SESSION ?? 'sim',
      'berth.owner-pid': String(process.pid),
      [SIM_LABEL]: simId,
      [INSTANCE_LABEL]: this.#instance,
    };
  }

  async #listen(separateRouter: boolean): Promise<void> {
    const { key, cert } = testCa();
    const codec = this.codec;
    const control = controlPlaneMethods({
      codec,
      images: this.#images,
      mounts: this.mounts,
      sandboxes: this.#sandboxes,
      tokens: this.#tokens,
      faults: this.faults,
      secrets: this.#secrets,
      apps: this.#apps,
      routerUrl: () => this.routerUrl,
      authTokens: this.#authTokens,
      imageBuilderVersion: () => this.#imageBuilderVersion,
    });
    const router = routerMethods({
      sandboxes: this.#sandboxes,
      tokens: this.#tokens,
      faults: this.faults,
      secretEnv: (id) => this.#secrets.get(id)?.env,
      longPollMs: () => this.#longPollMs,
      images: this.#images,
    });
    const serve = (methods: Map<string, Method>) =>
      GrpcServer.start({
        key,
        cert,
        codec,
        methods,
        before: (ctx) => {
          const failure = this.faults.takeFailure(ctx.path);
          if (failure) throw failure;
          if (ctx.path.startsWith('/modal.client.ModalClient/')) {
            // A client too old is told so whatever its credentials.
            checkClientVersion(ctx, this.faults.clientVersionPolicy);
            checkToken(ctx, this.tokenId, this.tokenSecret);
          }
        },
        onCall: (record) => this.calls.push(record),
      });
    if (separateRouter) this.#servers = [await serve(control.methods), await serve(router.methods)];
    else this.#servers = [await serve(new Map([...control.methods, ...router.methods]))];
  }
}
