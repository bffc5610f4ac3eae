import type Docker from 'dockerode';
import { ConfigError, type NetworkAllowlist, type NetworkNotice } from '@berth/core';
import {
  AllowlistRefresh,
  hostsFileCommand,
  refreshNamesMs,
  resolveAllowlist,
  systemResolver,
  type AllowedHost,
  type ResolvedAllowlist,
} from '@berth/core/backend-kit';
import { OPEN_RULES, allowRules, applyRules, nameserversOf } from './egress-rules.js';
import { BACKEND, IDENTITY } from './identity.js';
import type { DockerBackendOptions } from './options.js';

/**
 * One sandbox's allowlist (see egress-rules.ts): its packet filter and /etc/hosts lines written,
 * replaced, emptied, and its names resolved again while it lives (options.refreshNamesMs).
 */
export class SandboxEgress {
  readonly #docker: Docker;
  readonly #id: string;
  readonly #options: DockerBackendOptions;
  /** The labels of the helper containers (the sandbox's create's), and where refreshes are said. */
  #labels: Record<string, string> = {};
  #notify: (notice: NetworkNotice) => void = () => undefined;
  /** Whether a filter was written (so 'public' must empty it). */
  #filtered = false;
  /** Whether berth's lines are in the sandbox's /etc/hosts (so 'public' must remove them). */
  #hosts = false;
  #refresh: AllowlistRefresh | undefined;

  constructor(docker: Docker, id: string, options: DockerBackendOptions) {
    this.#docker = docker;
    this.#id = id;
    this.#options = options;
  }

  /** At create: the labels of what it makes, and where the sandbox's network notices go. */
  bind(labels: Record<string, string>, notify: (notice: NetworkNotice) => void): void {
    this.#labels = { ...labels };
    this.#notify = notify;
  }

  /** The allowlist's blocks and names, its names resolved now (before a container is made for it, at start). */
  resolve(allowlist: NetworkAllowlist): Promise<ResolvedAllowlist> {
    return resolveAllowlist(allowlist, this.#options.resolveHost ?? systemResolver, { backend: BACKEND, environmentId: this.#id, engine: 'Docker' });
  }

  /**
   * Puts the sandbox under `allowlist`: its filter written, then `join` (the bridge), then its
   * names in /etc/hosts (the engine edits that file when a sandbox joins a network), then their
   * refresh started.
   */
  async allow(allowlist: NetworkAllowlist, resolved: ResolvedAllowlist, join: () => Promise<void>): Promise<void> {
    await this.stop();
    await this.#apply(resolved.blocks);
    await join();
    await this.#writeHosts(resolved.hosts);
    const every = refreshNamesMs(this.#options, IDENTITY);
    if (AllowlistRefresh.wanted(resolved, every))
      this.#refresh = new AllowlistRefresh(
        resolved,
        every,
        () => this.resolve(allowlist),
        async (next) => {
          await this.#apply(next.blocks);
          await this.#writeHosts(next.hosts);
        },
        this.#notify,
      );
  }

  /** Empties the filter and removes berth's hosts lines, where they were written. */
  async open(): Promise<void> {
    await this.stop();
    await this.#writeHosts([]);
    if (!this.#filtered) return;
    await applyRules(this.#docker, this.#id, this.#image(), OPEN_RULES, this.#labels, this.#id);
    this.#filtered = false;
  }

  /** No more refreshes (a switch, the sandbox's removal); waits for one in flight. */
  async stop(): Promise<void> {
    const refresh = this.#refresh;
    this.#refresh = undefined;
    await refresh?.stop();
  }

  /** Writes the filter for `blocks`, the sandbox's resolvers (its resolv.conf's) cut off. */
  async #apply(blocks: readonly string[]): Promise<void> {
    const rules = allowRules(blocks, nameserversOf(await this.#resolvConf()));
    this.#filtered = true;
    await applyRules(this.#docker, this.#id, this.#image(), rules, this.#labels, this.#id);
  }

  /**
   * Makes the allowlist's names resolve inside (its resolvers being cut off): berth's lines in its
   * /etc/hosts replaced, by a shell run as root (whatever the image's user).
   */
  async #writeHosts(hosts: readonly AllowedHost[]): Promise<void> {
    if (hosts.length === 0 && !this.#hosts) return;
    const exec = await this.#docker.getContainer(this.#id).exec({ Cmd: hostsFileCommand(hosts), User: '0', AttachStdout: true, AttachStderr: true });
    const stream = await exec.start({});
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    const { ExitCode } = await exec.inspect();
    if (ExitCode !== 0)
      throw new ConfigError({
        operation: 'network',
        backend: BACKEND,
        environmentId: this.#id,
        path: 'spec.network.allow',
        message: `the allowlist's names could not be written into the sandbox's /etc/hosts (/bin/sh exited ${ExitCode}: ${Buffer.concat(chunks)
          .toString('utf8')
          .replace(/[\x00-\x08]/g, '')
          .trim()
          .slice(-300)}): names need /bin/sh in the image; list addresses or ranges instead`,
      });
    this.#hosts = hosts.length > 0;
  }

  #image(): string {
    const image = this.#options.egressImage;
    if (!image) throw new Error('unreachable: allowlists are refused without options.egressImage (capabilities)');
    return image;
  }

  /** The sandbox's /etc/resolv.conf, through the archive API (a one-file tar). */
  async #resolvConf(): Promise<string> {
    const stream = await this.#docker.getContainer(this.#id).getArchive({ path: '/etc/resolv.conf' });
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    const tar = Buffer.concat(chunks);
    const size = Number.parseInt(tar.subarray(124, 136).toString('ascii').replace(/\0.*$/, '').trim() || '0', 8);
    return tar.subarray(512, 512 + size).toString('utf8');
  }
}
