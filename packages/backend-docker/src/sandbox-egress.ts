import type Docker from 'dockerode';
import { allowEntries, ConfigError, type NetworkAllowlist, type NetworkNotice } from '@berth/core';
import { type EgressProxy, type ResolvedAllowlist, resolvConfAt, SandboxAllowlist, systemResolver } from '@berth/core/backend-kit';
import type { BridgeProxy } from './bridge-proxy.js';
import { publicNetworkName } from './bridge-limits.js';
import type { EgressImage } from './egress-image.js';
import { applyRules } from './egress-rules.js';
import { egressTables, nameserversOf, openTables } from './egress-tables.js';
import { BACKEND, IDENTITY } from './identity.js';
import type { DockerBackendOptions } from './options.js';

/** Where the engine's own resolver listens in a sandbox on a user-defined network. */
const ENGINE_RESOLVER = '127.0.0.11';

/** An allowlist's names and wildcards, which go through berth's egress proxy; none: addresses only. */
function namedEntries(allowlist: NetworkAllowlist) {
  return allowEntries(allowlist).filter((e) => e.kind === 'host' || e.kind === 'wildcard');
}

/** An allowlist's addresses and ranges, as CIDRs: what its packet filter lets out as they are. */
function givenBlocks(allowlist: NetworkAllowlist): string[] {
  return allowEntries(allowlist).flatMap((e) => (e.kind === 'range' ? [e.cidr] : e.kind === 'address' ? [`${e.address}/32`] : []));
}

/**
 * One sandbox's allowlist on Docker (see egress-rules.ts): its packet filter written, replaced or
 * emptied by a helper container. Addresses and ranges only: the kit's SandboxAllowlist applies
 * them. With names or wildcards: the sandbox's DNS, TLS and HTTP go to berth's egress proxy
 * (bridge-proxy.ts), which admits the sandbox's address on the bridge for them.
 */
export class SandboxEgress {
  readonly #docker: Docker;
  readonly #id: string;
  readonly #options: DockerBackendOptions;
  readonly #image: EgressImage;
  readonly #proxy: BridgeProxy;
  readonly #names: SandboxAllowlist;
  /** The labels of the helper containers (the sandbox's create's). */
  #labels: Record<string, string> = {};
  /** Whether a filter was written (so 'public' must empty it), and whether nat's chains were hooked. */
  #filtered = false;
  #natHooked = false;
  /** Withdraws the sandbox's admission at the proxy (a switch, its removal: its address may go to another container). */
  #withdraw: (() => void) | undefined;
  /** The resolv.conf the engine wrote, while berth's (the proxy as resolver) is in its place; put back on 'public'. */
  #engineResolvConf: string | undefined;

  constructor(docker: Docker, id: string, options: DockerBackendOptions, image: EgressImage, proxy: BridgeProxy) {
    this.#docker = docker;
    this.#id = id;
    this.#options = options;
    this.#image = image;
    this.#proxy = proxy;
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

  /**
   * Before a container is made for it (at start): an allowlist of addresses, its blocks; one with
   * names, the proxy made (so an engine that cannot reach it refuses before any container).
   */
  async resolve(allowlist: NetworkAllowlist): Promise<ResolvedAllowlist> {
    if (!this.#options.egressProxy || namedEntries(allowlist).length === 0) return this.#names.resolve(allowlist);
    await this.#proxy.get(this.#id);
    return { blocks: givenBlocks(allowlist), hosts: [] };
  }

  /** Puts the sandbox under `allowlist`: its filter written, then `join` (the bridge), then, with names, its address admitted at the proxy. */
  async allow(allowlist: NetworkAllowlist, resolved: ResolvedAllowlist, join: () => Promise<void>): Promise<void> {
    this.#withdraw?.();
    this.#withdraw = undefined;
    const named = this.#options.egressProxy ? namedEntries(allowlist) : [];
    if (named.length === 0) return this.#names.apply(allowlist, resolved, (blocks) => this.#apply(blocks), { opened: join });
    await this.#names.stop();
    const proxy = await this.#proxy.get(this.#id);
    await this.#apply(resolved.blocks, proxy);
    await join();
    this.#withdraw = proxy.admit(await this.#bridgeAddress(), named, this.#options.resolveHost ?? systemResolver);
    await this.#resolveAt(proxy.ports.host);
  }

  /** Empties berth's chains and withdraws the proxy's admission. */
  async open(): Promise<void> {
    await this.stop();
    await this.#names.open();
    if (this.#engineResolvConf !== undefined) {
      await this.#writeResolvConf(this.#engineResolvConf);
      this.#engineResolvConf = undefined;
    }
    if (!this.#filtered) return;
    await applyRules(this.#docker, this.#id, await this.#image.get(this.#id), openTables(this.#natHooked), this.#labels, this.#id);
    this.#filtered = false;
  }

  /** No more refreshes or proxy admission (a switch, the sandbox's removal); waits for a refresh in flight. */
  stop(): Promise<void> {
    this.#withdraw?.();
    this.#withdraw = undefined;
    return this.#names.stop();
  }

  /** Writes the filter for `blocks`, the sandbox's resolvers (its resolv.conf's) cut off, or sent to the proxy. */
  async #apply(blocks: readonly string[], proxy?: EgressProxy): Promise<void> {
    const rules = egressTables({
      blocks,
      // The engine's resolver on a user-defined network, also when resolv.conf does not say it yet
      // (a sandbox started offline gets it at its first join, after this filter is written).
      nameservers: [...new Set([...nameserversOf(this.#engineResolvConf ?? (await this.#resolvConf())), ENGINE_RESOLVER])],
      ...(proxy ? { proxy: proxy.ports } : {}),
      hookFilter: !this.#filtered,
      nat: proxy && !this.#natHooked ? 'hook' : proxy || this.#natHooked ? 'write' : 'skip',
    });
    const wasFiltered = this.#filtered;
    this.#filtered = true;
    try {
      await applyRules(this.#docker, this.#id, await this.#image.get(this.#id), rules, this.#labels, this.#id);
    } catch (error) {
      // Nothing was written (iptables-restore writes a table whole or not at all): hooks still to come.
      this.#filtered = wasFiltered;
      throw error;
    }
    if (proxy) this.#natHooked = true;
  }

  /**
   * The sandbox's resolv.conf names the proxy's address as its only resolver (its nat sends port 53
   * there to the proxy's): the engine's resolver on a user-defined network is on loopback, whose
   * nat rules the engine puts back ahead of berth's at each join. Written after the join, since
   * the engine writes the file then; its search and options lines are kept.
   */
  async #resolveAt(host: string): Promise<void> {
    const current = await this.#resolvConf();
    this.#engineResolvConf ??= current;
    await this.#writeResolvConf(resolvConfAt(this.#engineResolvConf, host));
  }

  /** Replaces /etc/resolv.conf's content in place (the engine bind-mounts it: a rename would fail). */
  async #writeResolvConf(content: string): Promise<void> {
    const { code, output } = await this.#runAsRoot(['/bin/sh', '-c', 'printf %s "$1" > /etc/resolv.conf', 'berth-resolv-conf', content]);
    if (code !== 0)
      throw new ConfigError({
        operation: 'network',
        backend: BACKEND,
        environmentId: this.#id,
        path: 'spec.network.allow',
        message: `the sandbox's /etc/resolv.conf could not be pointed at berth's egress proxy (/bin/sh exited ${code}: ${output.trim().slice(-300)}): names need /bin/sh in the image; list addresses or ranges instead`,
      });
  }

  /** The sandbox's address on the bridge: what the proxy tells it apart by. */
  async #bridgeAddress(): Promise<string> {
    const info = await this.#docker.getContainer(this.#id).inspect();
    const address = info.NetworkSettings?.Networks?.[publicNetworkName(this.#options.publicNetwork)]?.IPAddress;
    if (!address) throw new Error(`unreachable: sandbox ${this.#id} has no address on its bridge after joining it`);
    return address;
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
