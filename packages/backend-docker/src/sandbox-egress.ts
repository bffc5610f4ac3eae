import type Docker from 'dockerode';
import type { NetworkAllowlist } from '@berth/core';
import { allowedBlocks, systemResolver } from '@berth/core/backend-kit';
import { OPEN_RULES, allowRules, applyRules, nameserversOf } from './egress-rules.js';
import { BACKEND } from './identity.js';
import type { DockerBackendOptions } from './options.js';

/** One sandbox's packet filter for allowlists (see egress-rules.ts): written, replaced, emptied. */
export class SandboxEgress {
  readonly #docker: Docker;
  readonly #id: string;
  readonly #options: DockerBackendOptions;
  /** Whether a filter was written (so 'public' must empty it). */
  #filtered = false;

  constructor(docker: Docker, id: string, options: DockerBackendOptions) {
    this.#docker = docker;
    this.#id = id;
    this.#options = options;
  }

  /** The allowlist's blocks, its names resolved now (before a container is made for it, at start). */
  blocks(allowlist: NetworkAllowlist): Promise<string[]> {
    return allowedBlocks(allowlist, this.#options.resolveHost ?? systemResolver, { backend: BACKEND, environmentId: this.#id, engine: 'Docker' });
  }

  /** Writes the filter for `blocks`, DNS to the sandbox's own resolvers (its resolv.conf) let through. */
  async apply(blocks: readonly string[], labels: Record<string, string>): Promise<void> {
    const rules = allowRules(blocks, nameserversOf(await this.#resolvConf()));
    this.#filtered = true;
    await applyRules(this.#docker, this.#id, this.#image(), rules, labels, this.#id);
  }

  /** Empties the filter, if one was written. */
  async open(labels: Record<string, string>): Promise<void> {
    if (!this.#filtered) return;
    await applyRules(this.#docker, this.#id, this.#image(), OPEN_RULES, labels, this.#id);
    this.#filtered = false;
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
