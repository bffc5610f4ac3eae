// What a test can make go wrong, the way it goes wrong on Modal. Counted faults apply to the next
// N matching calls and are used up by them; the others act at once or stay until changed.
import type { ClientVersionPolicy } from './client-version.js';
import { RpcError } from './grpc-server.js';

export interface FaultTargets {
  vanish(sandboxId: string): Promise<void>;
  evict(sandboxId: string): Promise<void>;
  expireRouterJwts(): void;
  expireAuthTokens(): void;
  /** Returns the calls in flight it hit (reset, or left to finish on a closing connection). */
  resetConnections(mode: 'rst' | 'goaway'): number;
}

/** One TaskExecStdioRead as served: which stream, from where, and the cut it took (bytes), if any. */
export interface StdioRead {
  descriptor: 'stdout' | 'stderr';
  offset: number;
  cutAfter?: number;
}

interface Failure {
  path: string;
  code: number;
  message: string;
  left: number;
}

export class Faults {
  #fetchSpec = 0;
  #rateLimit: { left: number; retryAfterSecs?: number } = { left: 0 };
  #stdioCuts: Array<{ bytes: number; descriptor?: 'stdout' | 'stderr' }> = [];
  /** Every TaskExecStdioRead served, in order of arrival: tests see which stream a cut hit and where reading resumed. */
  readonly stdioReads: StdioRead[] = [];
  #slowMs = 0;
  #failures: Failure[] = [];
  #killsAs: 'FAILURE' | 'INTERNAL_FAILURE' = 'FAILURE';
  #clientVersion: ClientVersionPolicy = {};

  constructor(readonly targets: FaultTargets) {}

  /** The sandbox's container is removed and the simulator forgets it: NOT_FOUND everywhere after. */
  vanish(sandboxId: string): Promise<void> {
    return this.targets.vanish(sandboxId);
  }

  /** The container is killed; the sandbox ends with MEMORY_MANAGER_EVICTION. */
  evict(sandboxId: string): Promise<void> {
    return this.targets.evict(sandboxId);
  }

  /** The next `count` SandboxCreate make sandboxes that end at once with INIT_FAILURE "FetchSpec failed: ...". */
  fetchSpecFailure(count = 1): void {
    this.#fetchSpec += count;
  }

  /**
   * The next `count` SandboxCreate (V1 or V2) answer RESOURCE_EXHAUSTED "Sandbox creation rate
   * limit exceeded", with Modal's retry hint (an RPCRetryPolicy) when `retryAfterSecs` is given.
   */
  rateLimit(opts: { count?: number; retryAfterSecs?: number }): void {
    this.#rateLimit = { left: opts.count ?? 1, ...(opts.retryAfterSecs !== undefined ? { retryAfterSecs: opts.retryAfterSecs } : {}) };
  }

  /** The next TaskExecStdioRead stream (of `descriptor`, when given) is reset (RST_STREAM) after sending `bytes` bytes. */
  cutStdioAfter(bytes: number, descriptor?: 'stdout' | 'stderr'): void {
    this.#stdioCuts.push({ bytes, ...(descriptor ? { descriptor } : {}) });
  }

  /** Every router JWT issued so far is refused (UNAUTHENTICATED) from now on. */
  expireRouterJwts(): void {
    this.targets.expireRouterJwts();
  }

  /** Every x-modal-auth-token issued so far is refused (UNAUTHENTICATED) from now on; AuthTokenGet gives new ones. */
  expireAuthTokens(): void {
    this.targets.expireAuthTokens();
  }

  /**
   * Control-plane calls from a client older than `minimum` (x-modal-client-version, compared
   * numerically part by part; a client that sends none counts as older) answer FAILED_PRECONDITION
   * "The client version (X) is too old. Please update (pip install --upgrade modal)."; undefined
   * lifts it.
   */
  requireClientVersion(minimum: string | undefined): void {
    const { minimum: _, ...rest } = this.#clientVersion;
    this.#clientVersion = minimum === undefined ? rest : { ...rest, minimum };
  }

  /** Every control-plane answer carries this in x-modal-warning (a deprecation notice, say); undefined stops it. */
  warnClients(message: string | undefined): void {
    const { warning: _, ...rest } = this.#clientVersion;
    this.#clientVersion = message === undefined ? rest : { ...rest, warning: message };
  }

  /** Long polls (SandboxWait, SandboxGetTaskId, TaskExecWait, ImageJoinStreaming) answer only after `ms`; 0 turns it off. */
  slowLongPoll(ms: number): void {
    this.#slowMs = ms;
  }

  /** 'rst': reset every stream in flight; 'goaway': GOAWAY on every connection. Returns the calls in flight it hit. */
  resetConnections(mode: 'rst' | 'goaway'): number {
    return this.targets.resetConnections(mode);
  }

  /** The next `count` calls to `path` (full path, or just the RPC name) answer with this status. */
  failNext(path: string, code: number, message: string, count = 1): void {
    this.#failures.push({ path, code, message, left: count });
  }

  /** How a container killed by something other than the simulator (docker kill, OOM) is reported. */
  reportKillsAs(status: 'FAILURE' | 'INTERNAL_FAILURE'): void {
    this.#killsAs = status;
  }

  // What the simulator asks as it serves.

  takeFailure(path: string): RpcError | undefined {
    const hit = this.#failures.find((f) => f.left > 0 && (f.path === path || path.endsWith(`/${f.path}`)));
    if (!hit) return undefined;
    hit.left--;
    this.#failures = this.#failures.filter((f) => f.left > 0);
    return new RpcError(hit.code, hit.message);
  }

  takeFetchSpecFailure(): boolean {
    if (this.#fetchSpec <= 0) return false;
    this.#fetchSpec--;
    return true;
  }

  /** Whether this SandboxCreate is to be rate limited, and the seconds to tell the client to wait, if any. */
  takeRateLimit(): { retryAfterSecs?: number } | undefined {
    if (this.#rateLimit.left <= 0) return undefined;
    this.#rateLimit.left--;
    const secs = this.#rateLimit.retryAfterSecs;
    return secs !== undefined ? { retryAfterSecs: secs } : {};
  }

  /** The cut this read takes, if one is armed for its stream; the read is logged in stdioReads either way. */
  takeStdioCut(read: { descriptor: 'stdout' | 'stderr'; offset: number }): number | undefined {
    const at = this.#stdioCuts.findIndex((c) => c.descriptor === undefined || c.descriptor === read.descriptor);
    const cut = at < 0 ? undefined : this.#stdioCuts.splice(at, 1)[0]!.bytes;
    this.stdioReads.push({ ...read, ...(cut !== undefined ? { cutAfter: cut } : {}) });
    return cut;
  }

  get slowLongPollMs(): number {
    return this.#slowMs;
  }

  get clientVersionPolicy(): ClientVersionPolicy {
    return this.#clientVersion;
  }

  get killsAs(): 'FAILURE' | 'INTERNAL_FAILURE' {
    return this.#killsAs;
  }
}
