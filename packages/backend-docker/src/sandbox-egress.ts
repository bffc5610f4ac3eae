import type Docker from 'dockerode';
import type { NetworkAllowlist, NetworkNotice } from '@berth/core';
import { SandboxAllowlist, type ResolvedAllowlist } from '@berth/core/backend-kit';
import type { EgressImage } from './egress-image.js';
import { OPEN_RULES, allowRules, applyRules, nameserversOf } from './egress-rules.js';
import { IDENTITY } from './identity.js';
import type { DockerBackendOptions } from './options.js';

/**
 * One sandbox's allowlist on Docker (see egress-rules.ts): its packet filter written, replaced or
 * emptied by a helper container; the rest (names in /etc/hosts, their refresh) is the kit's
 * SandboxAllowlist, over an exec as root.
 */
export class SandboxEgress {
  readonly #docker: Docker;
  readonly #id: string;
  readonly #image: EgressImage;
  readonly #names: SandboxAllowlist;
  /** The labels of the helper containers (the sandbox's create's). */
  #labels: Record<string, string> = {};
  /** Whether a filter was written (so 'public' must empty it). */
  #filtered = false;

  constructor(docker: Docker, id: string, options: DockerBackendOptions, image: EgressImage) {
    this.#docker = docker;
    this.#id = id;
    this.#image = image;
    this.#names = new SandboxAllowlist(
      {
        ...IDENTITY,
        engine: 'Docker',
        environmentId: id,
        owner: "the sandbox's",
        hostsNeed: '/bin/sh in the image',
        run: (argv) => this.#runAsRoot(argv),
      },
      options,
    );
  }

  /** At create: the labels of what it makes, and where the sandbox's network notices go. */
  bind(labels: Record<string, string>, notify: (notice: NetworkNotice) => void): void {
    this.#labels = { ...labels };
    this.#names.bind(notify);
  }

  /** The allowlist's blocks and names, its names resolved now (before a container is made for it, at start). */
  resolve(allowlist: NetworkAllowlist): Promise<ResolvedAllowlist> {
    return this.#names.resolve(allowlist);
  }

  /**
   * Puts the sandbox under `allowlist`: its filter written, then `join` (the bridge), then its
   * names in /etc/hosts (the engine edits that file when a sandbox joins a network), then their
   * refresh started.
   */
  allow(allowlist: NetworkAllowlist, resolved: ResolvedAllowlist, join: () => Promise<void>): Promise<void> {
    return this.#names.apply(allowlist, resolved, (blocks) => this.#apply(blocks), { opened: join });
  }

  /** Empties the filter and removes berth's hosts lines, where they were written. */
  async open(): Promise<void> {
    await this.#names.open();
    if (!this.#filtered) return;
    await applyRules(this.#docker, this.#id, await this.#image.get(this.#id), OPEN_RULES, this.#labels, this.#id);
    this.#filtered = false;
  }

  /** No more refreshes (a switch, the sandbox's removal); waits for one in flight. */
  stop(): Promise<void> {
    return this.#names.stop();
  }

  /** Writes the filter for `blocks`, the sandbox's resolvers (its resolv.conf's) cut off. */
  async #apply(blocks: readonly string[]): Promise<void> {
    const rules = allowRules(blocks, nameserversOf(await this.#resolvConf()));
    this.#filtered = true;
    await applyRules(this.#docker, this.#id, await this.#image.get(this.#id), rules, this.#labels, this.#id);
  }

  /** A command run as root in the sandbox (whatever the image's user): its exit code and output. */
  async #runAsRoot(argv: readonly string[]): Promise<{ code: number | null; output: string }> {
    const exec = await this.#docker.getContainer(this.#id).exec({ Cmd: [...argv], User: '0', AttachStdout: true, AttachStderr: true });
    const stream = await exec.start({});
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    const { ExitCode } = await exec.inspect();
    // The stream is multiplexed: its frame headers' bytes are dropped, the text kept.
    return {
      code: ExitCode ?? null,
      output: Buffer.concat(chunks)
        .toString('utf8')
        .replace(/[\x00-\x08]/g, ''),
    };
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
