import type { NetworkNotice } from '../contract.js';
import type { NetworkAllowlist } from '../network-allowlist.js';
import { BackendUnavailableError, ConfigError } from '../errors.js';
import { type AllowedHost, type ResolvedAllowlist, resolveAllowlist, systemResolver } from './allowlist-blocks.js';
import { hostsFileCommand } from './allowlist-hosts.js';
import { AllowlistRefresh } from './allowlist-refresh.js';
import { type AllowlistNamesOption, refreshNamesMs } from './common-options.js';

/** What a backend that enforces allowlists by address gives SandboxAllowlist: its engine's parts only. */
export interface AllowlistEngine {
  backend: string;
  /** The backend's factory, for option errors (options.refreshNamesMs). */
  factory: string;
  /** As errors say it: 'Docker', 'Kubernetes'. */
  engine: string;
  environmentId: string;
  /** The sandbox as its errors name it: "the sandbox's", "the pod's". */
  owner: string;
  /** What a hosts file write needs from the image, for the error when it fails. */
  hostsNeed: string;
  /** Runs `argv` in the sandbox, as a user who may write /etc/hosts; its exit code (null: cut off) and output. */
  run(argv: readonly string[]): Promise<{ code: number | null; output: string }>;
}

/** How a sandbox comes under an allowlist: its engine lets out exactly `blocks` (replacing what it let out before). */
export type AllowBlocks = (blocks: readonly string[], signal?: AbortSignal) => Promise<void>;

/**
 * One sandbox's allowlist, for backends that enforce names by the addresses berth resolves: its
 * names resolved, its blocks let out by the engine, the names written into its /etc/hosts (its
 * resolvers being cut off, they are all it resolves), resolved again while it lives
 * (options.refreshNamesMs, notices to the sandbox's events), and its hosts lines removed on
 * 'public'. The backend holds only how its engine lets blocks out and runs a command.
 */
export class SandboxAllowlist {
  readonly #engine: AllowlistEngine;
  readonly #options: AllowlistNamesOption;
  #notify: (notice: NetworkNotice) => void = () => undefined;
  /** Whether berth's lines are in the sandbox's /etc/hosts (removed on 'public'). */
  #hosts = false;
  #refresh: AllowlistRefresh | undefined;

  constructor(engine: AllowlistEngine, options: AllowlistNamesOption) {
    this.#engine = engine;
    this.#options = options;
  }

  /** At create: where the sandbox's network notices go. */
  bind(notify: (notice: NetworkNotice) => void): void {
    this.#notify = notify;
  }

  /** The allowlist's blocks and names, its names resolved now (before the sandbox is made, at start: a name that does not resolve costs none). */
  resolve(allowlist: NetworkAllowlist): Promise<ResolvedAllowlist> {
    const { backend, environmentId, engine } = this.#engine;
    return resolveAllowlist(allowlist, this.#options.resolveHost ?? systemResolver, { backend, environmentId, engine });
  }

  /**
   * Puts the sandbox under `allowlist`: `allow` lets its blocks out, then `opened` (Docker joins
   * the bridge there: the engine rewrites /etc/hosts on a join), then its names go into /etc/hosts;
   * then their refresh starts, which lets out and writes again whenever the names move.
   */
  async apply(
    allowlist: NetworkAllowlist,
    resolved: ResolvedAllowlist,
    allow: AllowBlocks,
    opts: { opened?: () => Promise<void>; signal?: AbortSignal } = {},
  ): Promise<void> {
    await this.stop();
    await allow(resolved.blocks, opts.signal);
    await opts.opened?.();
    await this.#writeHosts(resolved.hosts);
    const every = refreshNamesMs(this.#options, this.#engine);
    if (!AllowlistRefresh.wanted(resolved, every)) return;
    const put = async (next: ResolvedAllowlist) => {
      await allow(next.blocks);
      await this.#writeHosts(next.hosts);
    };
    this.#refresh = new AllowlistRefresh(resolved, every, () => this.resolve(allowlist), put, this.#notify);
  }

  /** Back to 'public' (or a switch away): no more refreshes, berth's hosts lines removed, so names resolve through the sandbox's resolvers again. */
  async open(): Promise<void> {
    await this.stop();
    await this.#writeHosts([]);
  }

  /** No more refreshes (a switch, the sandbox's removal); waits for one in flight. */
  async stop(): Promise<void> {
    const refresh = this.#refresh;
    this.#refresh = undefined;
    await refresh?.stop();
  }

  /** berth's lines in the sandbox's /etc/hosts replaced by `hosts` (none: removed, if there). */
  async #writeHosts(hosts: readonly AllowedHost[]): Promise<void> {
    if (hosts.length === 0 && !this.#hosts) return;
    const { code, output } = await this.#engine.run(hostsFileCommand(hosts));
    const at = { operation: 'network' as const, backend: this.#engine.backend, environmentId: this.#engine.environmentId };
    const file = `${this.#engine.owner} /etc/hosts`;
    if (code === null)
      throw new BackendUnavailableError({ ...at, message: `writing the allowlist's names into ${file} ended without an exit status (the connection was cut)` });
    if (code !== 0)
      throw new ConfigError({
        ...at,
        path: 'spec.network.allow',
        message: `the allowlist's names could not be written into ${file} (/bin/sh exited ${code}: ${output.trim().slice(-300)}): names need ${this.#engine.hostsNeed}; list addresses or ranges instead`,
      });
    this.#hosts = hosts.length > 0;
  }
}
