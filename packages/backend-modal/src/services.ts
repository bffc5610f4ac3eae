import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError, isBuiltImage, type EnvironmentSpec, type ImageSource, type Service } from '@berth/core';
import {
  SERVICES_HOSTS_MARK,
  hostsFileCommand,
  type CreateContext,
  type ProcessRequest,
  type SandboxProcess,
  type ServiceEngine,
  type ServiceState,
} from '@berth/core/backend-kit';
import { BACKEND } from './credentials.js';

/** What a member of the group (the sandbox, or a service's own sandbox) is to the services: a Modal sandbox (sandbox.ts). */
export interface ServiceMember {
  create(ctx: CreateContext): Promise<void>;
  spawn(request: ProcessRequest): Promise<SandboxProcess>;
  ended(): Promise<{ exitCode: number | null; reason: string } | undefined>;
  output(): Promise<string>;
  remove(): Promise<void>;
}

/**
 * A sandbox's services (spec.services) on Modal: each its own sandbox in the same app, all with
 * i6pn (Modal's private IPv6 between i6pn containers of a workspace), the sandbox's too. Modal has
 * no call that says a sandbox's i6pn address: each service's is read inside it (i6pn.modal.local,
 * as Modal documents, else its fdaa:: interface address) and written into the sandbox's /etc/hosts
 * under the service's names. Modal runs a sandbox's command, never its image's CMD: a service
 * without `command` takes its Dockerfile's ENTRYPOINT and CMD (a build), else it is a ConfigError.
 */
export class ModalServices implements ServiceEngine {
  readonly #id: string;
  readonly #spec: EnvironmentSpec;
  readonly #make: (name: string, spec: EnvironmentSpec, image: ImageSource, entrypoint: string[]) => ServiceMember;
  readonly #members = new Map<string, ServiceMember>();
  /** Each started member's i6pn address, and the sandbox's own ('main'). */
  readonly #addresses = new Map<string, string>();
  #ctx: CreateContext | undefined;

  constructor(id: string, spec: EnvironmentSpec, make: (name: string, spec: EnvironmentSpec, image: ImageSource, entrypoint: string[]) => ServiceMember) {
    this.#id = id;
    this.#spec = spec;
    this.#make = make;
  }

  get any(): boolean {
    return Object.keys(this.#spec.services ?? {}).length > 0;
  }

  /** The sandbox's create context (whose labels and progress the services' creates share), and its own i6pn address. */
  async bind(ctx: CreateContext, sandbox: ServiceMember): Promise<void> {
    this.#ctx = ctx;
    this.#addresses.set('main', await this.#address('main', sandbox));
  }

  async start(name: string, signal: AbortSignal): Promise<void> {
    const service = this.#spec.services[name]!;
    const entrypoint = await commandOf(name, service, this.#id);
    // Out to the world only with a sandbox that starts there; otherwise the group's i6pn alone.
    const spec: EnvironmentSpec = {
      image: service.image,
      resources: { ...service.resources },
      network: this.#spec.network === 'public' ? 'public' : 'none',
      networkSwitch: false,
      env: { ...service.env },
      ...(service.workdir ? { workdir: service.workdir } : {}),
      timeouts: this.#spec.timeouts.lifetimeMs !== undefined ? { lifetimeMs: this.#spec.timeouts.lifetimeMs } : {},
      labels: {},
      mounts: [],
      services: {},
      dependsOn: {},
    };
    // Its command waits for the gate: it may resolve its group's names from its first instruction.
    const sandbox = this.#make(name, spec, service.image, ['/bin/sh', '-c', GATE_SCRIPT, 'berth-service', ...entrypoint]);
    this.#members.set(name, sandbox);
    const ctx = this.#ctx;
    await sandbox.create({
      labels: { ...(ctx?.labels ?? {}), 'berth.service': name },
      signal,
      progress: (update) =>
        ctx?.progress({ ...(update.status ? { status: `service ${name}: ${update.status}` } : {}), ...(update.build ? { build: update.build } : {}) }),
      notify: () => undefined,
      lost: () => undefined,
    });
    // What it may reach at once by name: what started before it (its dependencies among them).
    this.#addresses.set(name, await this.#address(name, sandbox));
    try {
      await this.#writeHosts(name, sandbox, true);
    } catch (error) {
      // Its command ran as soon as the gate opened and may have ended under the exec (a one-shot, a
      // crash): that end is the kit's to judge (completed, or a ServiceStartError), not this exec's.
      if (!(await endedSoon(sandbox))) throw error;
    }
  }

  /** A member's own i6pn address, read inside it. */
  async #address(name: string, member: ServiceMember): Promise<string> {
    const found = await run(member, ['/bin/sh', '-c', ADDRESS_SCRIPT], 30_000, AbortSignal.timeout(60_000));
    const address = found.output.trim().split('\n').pop()?.trim() ?? '';
    if (found.code !== 0 || !/^[0-9a-f:]+$/i.test(address))
      throw new ConfigError({
        operation: 'start',
        backend: BACKEND,
        environmentId: this.#id,
        path: name === 'main' ? 'spec.image' : `spec.services.${name}.image`,
        message: `${name === 'main' ? 'the sandbox' : `service ${name}`}'s private (i6pn) address could not be read inside it (exit ${found.code}: ${found.output.trim().slice(-200)}): berth needs /bin/sh and awk in the image on Modal`,
      });
    return address;
  }

  /** Every known address, under each service's names (and the sandbox's 'main'), into `member`'s /etc/hosts. */
  async #writeHosts(name: string, member: ServiceMember, openGate = false): Promise<void> {
    const hosts = [...this.#addresses].flatMap(([owner, address]) =>
      owner === name ? [] : [owner, ...(this.#spec.services[owner]?.aliases ?? [])].map((alias) => ({ name: alias, addresses: [address] })),
    );
    const [sh, c, script, ...args] = hostsFileCommand(hosts, '/etc/hosts', SERVICES_HOSTS_MARK);
    const argv = openGate ? [sh!, c!, `${script!}\n: > ${GATE_FILE}`, ...args] : [sh!, c!, script!, ...args];
    const written = await run(member, argv, 30_000, AbortSignal.timeout(60_000));
    if (written.code !== 0)
      throw new ConfigError({
        operation: 'start',
        backend: BACKEND,
        environmentId: this.#id,
        path: name === 'main' ? 'spec.image' : `spec.services.${name}.image`,
        message: `the names of the group could not be written into ${name === 'main' ? "the sandbox's" : `service ${name}'s`} /etc/hosts (exit ${written.code}: ${written.output.trim().slice(-200)}): berth needs /bin/sh in the image, run as root`,
      });
  }

  /** Once all are up: every running member, and the sandbox, knows every name. */
  async writeAllHosts(sandbox: ServiceMember, completes: ReadonlySet<string>): Promise<void> {
    for (const done of completes) this.#addresses.delete(done);
    await this.#writeHosts('main', sandbox);
    for (const [name, member] of this.#members) if (!completes.has(name)) await this.#writeHosts(name, member);
  }

  #member(name: string): ServiceMember {
    const member = this.#members.get(name);
    if (!member) throw new Error(`unreachable: service ${name} was not started`);
    return member;
  }

  async probe(name: string, argv: readonly string[], timeoutMs: number, signal: AbortSignal) {
    const member = this.#member(name);
    try {
      return await run(member, argv, timeoutMs, signal);
    } catch (error) {
      // An exec refused or cut because the sandbox ended: a failed probe, whose end the kit then reads.
      if (await endedSoon(member)) return { code: null, output: '', timedOut: false };
      throw error;
    }
  }

  async state(name: string): Promise<ServiceState> {
    const ended = await this.#member(name).ended();
    if (!ended) return { running: true };
    return { running: false, exitCode: ended.exitCode, oomKilled: ended.reason.startsWith('OOMKilled'), reason: ended.reason };
  }

  async logs(name: string): Promise<string> {
    return this.#member(name).output();
  }

  /** A service that ended while the sandbox lives (a one-shot that completed aside), else undefined. */
  async lost(completes: ReadonlySet<string>): Promise<string | undefined> {
    for (const [name, member] of this.#members) {
      if (completes.has(name)) continue;
      const ended = await member.ended();
      if (ended) return `service ${name}: ${ended.reason}`;
    }
    return undefined;
  }

  async remove(): Promise<void> {
    await Promise.all([...this.#members.values()].map((m) => m.remove()));
  }
}

/** Where a service's command waits before it runs (GATE_SCRIPT): berth creates it once the service's /etc/hosts names its group. */
const GATE_FILE = '/tmp/.berth-services-ready';
const GATE_SCRIPT = `while [ ! -e ${GATE_FILE} ]; do sleep 0.05; done; exec "$@"`;

/**
 * A container's own i6pn address: `i6pn.modal.local` as its resolver (or /etc/hosts) says, else
 * the first fdaa:: address of its interfaces (/proc/net/if_inet6, colons put back).
 */
const ADDRESS_SCRIPT = [
  "a=$(getent ahostsv6 i6pn.modal.local 2>/dev/null | awk 'NR==1{print $1}')",
  '[ -n "$a" ] || a=$(awk \'$2 == "i6pn.modal.local" {print $1; exit}\' /etc/hosts 2>/dev/null)',
  "[ -n \"$a\" ] || a=$(awk '$1 ~ /^fdaa/ {print $1; exit}' /proc/net/if_inet6 | sed 's/..../&:/g; s/:$//')",
  '[ -n "$a" ] && echo "$a"',
].join('\n');

/** Whether a member has ended, given Modal a moment to say so (a container's end reaches its sandbox's status a little later). */
async function endedSoon(member: ServiceMember, withinMs = 3000): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    if (await member.ended().catch(() => undefined)) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Runs argv in a member sandbox: its exit code (null: cut off at `timeoutMs`) and output. */
async function run(member: ServiceMember, argv: readonly string[], timeoutMs: number, signal: AbortSignal) {
  const process = await member.spawn({ argv, env: {}, stdin: false });
  const chunks: Buffer[] = [];
  const collect = async (stream: NodeJS.ReadableStream) => {
    for await (const chunk of stream) chunks.push(Buffer.from(chunk as Buffer));
  };
  let timer: NodeJS.Timeout | undefined;
  const cut = new Promise<'cut'>((resolve) => {
    timer = setTimeout(() => resolve('cut'), timeoutMs);
    signal.addEventListener('abort', () => resolve('cut'), { once: true });
  });
  const done = Promise.all([collect(process.stdout), collect(process.stderr)]).then(() => process.exit);
  const outcome = await Promise.race([done, cut]);
  clearTimeout(timer);
  const output = Buffer.concat(chunks).toString('utf8');
  if (outcome === 'cut') {
    process.abandon();
    return { code: null, output, timedOut: true };
  }
  return { code: outcome.code, output, timedOut: false };
}

/** Before any I/O: a service Modal could not run as asked (a pulled image and no command: Modal never runs an image's CMD). */
export function refuseUnrunnable(spec: EnvironmentSpec, environmentId: string): void {
  for (const [name, service] of Object.entries(spec.services ?? {})) {
    if (service.command || service.entrypoint || isBuiltImage(service.image)) continue;
    throw noCommand(name, environmentId);
  }
}

function noCommand(name: string, environmentId: string): ConfigError {
  return new ConfigError({
    operation: 'config',
    backend: BACKEND,
    environmentId,
    path: `spec.services.${name}.command`,
    message: `spec.services.${name} has no command: Modal runs a sandbox's command and never its image's CMD, and berth reads one only from a Dockerfile it builds; give spec.services.${name}.command (the image's CMD, e.g. ["postgres"])`,
  });
}

/** A service's command: its own, else its Dockerfile's ENTRYPOINT and CMD (a build), else a ConfigError. */
async function commandOf(name: string, service: Service, environmentId: string): Promise<string[]> {
  if (service.command || service.entrypoint) return [...(service.entrypoint ?? []), ...(service.command ?? [])];
  const image = service.image;
  if (isBuiltImage(image)) {
    const text = await readFile(join(image.build.context, image.build.dockerfile ?? 'Dockerfile'), 'utf8').catch(() => '');
    const argv = dockerfileCommand(text);
    if (argv.length > 0) return argv;
  }
  throw noCommand(name, environmentId);
}

/** The last stage's ENTRYPOINT and CMD of a Dockerfile, as Docker runs them (the shell form through /bin/sh -c). */
export function dockerfileCommand(text: string): string[] {
  const lines = text.replace(/\\\r?\n/g, ' ').split(/\r?\n/);
  let entrypoint: string[] = [];
  let cmd: string[] = [];
  for (const raw of lines) {
    const line = raw.trim();
    const m = /^(FROM|ENTRYPOINT|CMD)\s+(.*)$/i.exec(line);
    if (!m) continue;
    const [, word, rest] = m;
    if (word!.toUpperCase() === 'FROM') {
      entrypoint = [];
      cmd = [];
      continue;
    }
    let argv: string[];
    try {
      const parsed = JSON.parse(rest!) as unknown;
      argv = Array.isArray(parsed) && parsed.every((a) => typeof a === 'string') ? parsed : ['/bin/sh', '-c', rest!];
    } catch {
      argv = ['/bin/sh', '-c', rest!];
    }
    // Docker: a new ENTRYPOINT resets the CMD inherited with it.
    if (word!.toUpperCase() === 'ENTRYPOINT') {
      entrypoint = argv;
      cmd = [];
    } else cmd = argv;
  }
  return [...entrypoint, ...cmd];
}
