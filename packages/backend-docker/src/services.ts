import type Docker from 'dockerode';
import { oneShots, type EnvironmentSpec, type ImageSource, type Service } from '@berth/core';
import { SERVICES_HOSTS_MARK, hostsFileCommand, type CreateContext, type ServiceEngine, type ServiceState } from '@berth/core/backend-kit';
import { DockerStreamDemuxer } from './demux.js';
import { dockerMessage, statusOf } from './docker-errors.js';
import type { DockerBackendOptions } from './options.js';
import { supplyImage, type DockerImageSource } from './image-supply.js';

/** The label naming which of a sandbox's services a container is. */
export const LABEL_SERVICE = 'berth.service';
/** The label naming which of a sandbox's volumes (`{ type: 'volume' }` mounts) an engine volume is. */
export const LABEL_VOLUME = 'berth.volume';

/** The engine volume of a sandbox's volume `name`. */
export const volumeName = (sandbox: string, name: string) => `${sandbox}-vol-${name}`;

/** A spec's volume mounts as the engine takes them. */
export function volumeMounts(sandbox: string, mounts: readonly { type: string; name?: string; target: string; readOnly?: boolean }[]): Docker.MountSettings[] {
  return mounts.flatMap((m) =>
    m.type === 'volume' && m.name ? [{ Type: 'volume' as const, Source: volumeName(sandbox, m.name), Target: m.target, ReadOnly: m.readOnly === true }] : [],
  );
}

/**
 * A sandbox's services (spec.services) on Docker: one container each, named `<sandbox>-<service>`,
 * on a network of the sandbox's own, internal (no way out: the engine gives it no gateway), where
 * each is reached by its name and aliases through the engine's resolver, and the sandbox by
 * 'main'. The sandbox also gets their addresses in /etc/hosts, which holds where its resolvers
 * are cut off (allowlists). Services whose sandbox starts 'public' are on the public bridge too.
 * All carry the sandbox's labels (and berth.service), so teardown, sweep and the guardian find them.
 */
export class DockerServices implements ServiceEngine {
  readonly #docker: Docker;
  readonly #options: DockerBackendOptions;
  readonly #id: string;
  readonly #spec: EnvironmentSpec;
  readonly #sourceOf: (image: ImageSource) => DockerImageSource;
  readonly #completes: Set<string>;
  #labels: Record<string, string> = {};
  #ctx: Pick<CreateContext, 'progress' | 'signal'> | undefined;
  /** Whether the network may exist (a create was sent). */
  #networkMade = false;
  #volumesMade = false;

  constructor(docker: Docker, options: DockerBackendOptions, id: string, spec: EnvironmentSpec, sourceOf: (image: ImageSource) => DockerImageSource) {
    this.#docker = docker;
    this.#options = options;
    this.#id = id;
    this.#spec = spec;
    this.#sourceOf = sourceOf;
    this.#completes = oneShots(spec.services, spec.dependsOn);
  }

  get any(): boolean {
    return Object.keys(this.#spec.services).length > 0;
  }

  /** The names of the sandbox's volumes: its own mounts' and its services'. */
  get volumes(): string[] {
    const names = [...this.#spec.mounts, ...Object.values(this.#spec.services).flatMap((s) => s.mounts)].flatMap((m) => (m.type === 'volume' ? [m.name] : []));
    return [...new Set(names)];
  }

  /** Before any container: the sandbox's volumes, empty, labelled as it is. */
  async createVolumes(labels: Record<string, string>): Promise<void> {
    for (const name of this.volumes) {
      this.#volumesMade = true;
      await this.#docker.createVolume({ Name: volumeName(this.#id, name), Labels: { ...labels, [LABEL_VOLUME]: name } });
    }
  }

  /** Whether a volume may exist (a create was sent). */
  get volumesMade(): boolean {
    return this.#volumesMade;
  }

  /** The sandbox's own network, which its services and it share. */
  get network(): string {
    return `${this.#id}-services`;
  }

  containerName(service: string): string {
    return `${this.#id}-${service}`;
  }

  /** Before the sandbox's container: its network, labelled as it is. */
  async createNetwork(labels: Record<string, string>, ctx: Pick<CreateContext, 'progress' | 'signal'>): Promise<void> {
    this.#labels = { ...labels };
    this.#ctx = ctx;
    this.#networkMade = true;
    // Internal (no route out) and no address of this machine on the bridge (inhibit_ipv4): the host is not reached either.
    await this.#docker.createNetwork({
      Name: this.network,
      Driver: 'bridge',
      Internal: true,
      CheckDuplicate: true,
      Options: { 'com.docker.network.bridge.inhibit_ipv4': 'true' },
      Labels: { ...labels },
    });
  }

  /** The network's IPv4 subnet: what an allowlist of the sandbox lets out besides its own entries. */
  async subnet(): Promise<string> {
    const info = (await this.#docker.getNetwork(this.network).inspect()) as { IPAM?: { Config?: { Subnet?: string }[] } };
    const subnet = info.IPAM?.Config?.map((c) => c.Subnet).find((s) => s && /^\d+\.\d+\.\d+\.\d+\/\d+$/.test(s));
    if (!subnet) throw new Error(`unreachable: the services network ${this.network} has no IPv4 subnet`);
    return subnet;
  }

  async start(name: string, signal: AbortSignal): Promise<void> {
    const service = this.#spec.services[name]!;
    const ctx = { progress: this.#ctx?.progress ?? (() => undefined), signal };
    const image = await this.#supply(name, service, ctx);
    const container = await this.#docker.createContainer({
      name: this.containerName(name),
      Image: image,
      ...(service.entrypoint ? { Entrypoint: service.entrypoint } : {}),
      ...(service.command ? { Cmd: service.command } : {}),
      Env: Object.entries(service.env).map(([k, v]) => `${k}=${v}`),
      ...(service.workdir ? { WorkingDir: service.workdir } : {}),
      ...(service.user ? { User: service.user } : {}),
      Hostname: name,
      Labels: { ...this.#labels, [LABEL_SERVICE]: name },
      HostConfig: {
        NetworkMode: this.network,
        ...(service.resources.cpus ? { NanoCpus: Math.round(service.resources.cpus * 1e9) } : {}),
        ...(service.resources.memoryMb ? { Memory: service.resources.memoryMb * 1024 * 1024 } : {}),
        ...(service.mounts.length ? { Mounts: volumeMounts(this.#id, service.mounts) } : {}),
      },
      NetworkingConfig: { EndpointsConfig: { [this.network]: { Aliases: [name, ...service.aliases] } } },
    });
    // Out to the world only with a sandbox that starts there; otherwise each other and the sandbox.
    if (this.#spec.network === 'public') await this.#docker.getNetwork(this.#publicNetwork()).connect({ Container: container.id });
    await container.start();
  }

  async #supply(name: string, service: Service, ctx: Pick<CreateContext, 'progress' | 'signal'>): Promise<string> {
    return (await supplyImage(this.#docker, this.#options, this.#sourceOf(service.image), this.#id, ctx, `service ${name}`)).canonical;
  }

  #publicNetwork(): string {
    return this.#options.publicNetwork ?? 'bridge';
  }

  async probe(
    name: string,
    argv: readonly string[],
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<{ code: number | null; output: string; timedOut: boolean }> {
    const exec = await this.#docker.getContainer(this.containerName(name)).exec({ Cmd: [...argv], AttachStdout: true, AttachStderr: true });
    const stream = await exec.start({});
    const chunks: Buffer[] = [];
    const done = (async () => {
      for await (const chunk of stream) chunks.push(chunk as Buffer);
    })();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      done.then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), timeoutMs);
        signal.addEventListener('abort', () => resolve(true), { once: true });
      }),
    ]);
    clearTimeout(timer);
    if (timedOut) (stream as { destroy?: () => void }).destroy?.();
    const output = plainText(Buffer.concat(chunks));
    if (timedOut) return { code: null, output, timedOut: true };
    const { ExitCode } = await exec.inspect();
    return { code: ExitCode ?? null, output, timedOut: false };
  }

  async state(name: string): Promise<ServiceState> {
    let state;
    try {
      state = (await this.#docker.getContainer(this.containerName(name)).inspect()).State;
    } catch (error) {
      if (statusOf(error) === 404) return { running: false, exitCode: null, reason: 'removed' };
      throw error;
    }
    if (state.Running && !state.Restarting) return { running: true };
    return {
      running: false,
      exitCode: state.ExitCode,
      oomKilled: state.OOMKilled,
      reason: state.OOMKilled ? 'OOMKilled' : `${state.Status} (exit ${state.ExitCode})`,
    };
  }

  async logs(name: string): Promise<string> {
    const logs = await this.#docker.getContainer(this.containerName(name)).logs({ stdout: true, stderr: true, tail: 20 });
    return plainText(Buffer.isBuffer(logs) ? logs : Buffer.from(String(logs)));
  }

  /**
   * A service that ended while the sandbox lives (a one-shot that completed aside): how, else
   * undefined. One list call for them all.
   */
  async lost(): Promise<string | undefined> {
    if (!this.any) return undefined;
    const containers = await this.#docker.listContainers({ all: true, filters: { label: [`berth.environment=${this.#id}`, LABEL_SERVICE] } });
    for (const name of Object.keys(this.#spec.services)) {
      if (this.#completes.has(name)) continue;
      const found = containers.find((c) => c.Labels[LABEL_SERVICE] === name);
      if (!found) return `service ${name}: removed`;
      if (found.State !== 'running') {
        const state = await this.state(name);
        return `service ${name}: ${state.running ? found.Status : state.reason}`;
      }
    }
    return undefined;
  }

  /** The lines for the sandbox's /etc/hosts: each service's address on the network, by its name and aliases. */
  async hostsCommand(): Promise<string[]> {
    const hosts = [];
    for (const [name, service] of Object.entries(this.#spec.services)) {
      if (this.#completes.has(name)) continue;
      const info = await this.#docker.getContainer(this.containerName(name)).inspect();
      const address = info.NetworkSettings?.Networks?.[this.network]?.IPAddress;
      if (!address) continue;
      for (const alias of [name, ...service.aliases]) hosts.push({ name: alias, addresses: [address] });
    }
    return hostsFileCommand(hosts, '/etc/hosts', SERVICES_HOSTS_MARK);
  }

  /** Removes every service container, then the network; each already gone is fine. */
  async remove(): Promise<void> {
    if (!this.any && !this.#networkMade && !this.#volumesMade) return;
    const containers = await this.#docker.listContainers({ all: true, filters: { label: [`berth.environment=${this.#id}`, LABEL_SERVICE] } });
    await Promise.all(
      containers.map((c) =>
        this.#docker
          .getContainer(c.Id)
          .remove({ force: true, v: true })
          .catch((error: unknown) => {
            if (statusOf(error) !== 404 && statusOf(error) !== 409) throw error;
          }),
      ),
    );
    if (this.#networkMade)
      await removeNetwork(this.#docker, this.network).catch((error: unknown) => {
        if (statusOf(error) !== 404) throw error;
      });
    // After every container that mounted them (the sandbox's own is removed before this).
    if (this.#volumesMade)
      for (const name of this.volumes)
        await this.#docker
          .getVolume(volumeName(this.#id, name))
          .remove()
          .catch((error: unknown) => {
            if (statusOf(error) !== 404) throw error;
          });
  }
}

/** An exec's or a log's multiplexed bytes (frames of stdout and stderr) as text, in order. */
function plainText(bytes: Buffer): string {
  const parts: Buffer[] = [];
  new DockerStreamDemuxer((_stream, payload) => parts.push(payload)).push(bytes);
  return Buffer.concat(parts).toString('utf8');
}

/** A network, once the containers being removed beside it have left it (a few seconds at most). */
export async function removeNetwork(docker: Docker, id: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await docker.getNetwork(id).remove();
    } catch (error) {
      if (attempt >= 20 || !/active endpoints/i.test(dockerMessage(error))) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}
