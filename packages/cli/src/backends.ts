import { ConfigError, type Backend, type ImageBuilder, type MirrorRule } from '@berth/core';
import type { Command } from 'commander';
import { collect, mirrorRules } from './options.js';
import { UsageError } from './usage-error.js';

/** The backends the CLI knows, by the name given to --backend: the package and its factory. */
const BACKENDS = {
  docker: { pkg: '@berth/backend-docker', factory: 'createDockerBackend' },
  k8s: { pkg: '@berth/backend-k8s', factory: 'createK8sBackend' },
  modal: { pkg: '@berth/backend-modal', factory: 'createModalBackend' },
} as const;

export type BackendName = keyof typeof BACKENDS;
export const BACKEND_NAMES = Object.keys(BACKENDS) as BackendName[];

/** The backend flags every sandbox-making command takes, as commander gives them. */
export interface BackendFlags {
  backend: string;
  mirror?: string[];
  kubeconfig?: string;
  context?: string;
  namespace?: string;
  buildRepository?: string;
  networkProbe?: string;
}

/** Where a flag applies: a k8s flag with another backend is a mistake worth saying. */
const K8S_FLAGS = [
  ['kubeconfig', '--kubeconfig'],
  ['context', '--context'],
  ['namespace', '--namespace'],
  ['buildRepository', '--build-repository'],
  ['networkProbe', '--network-probe'],
] as const;

/**
 * --backend and what configures it, named as kubectl names them (--kubeconfig, --context,
 * -n/--namespace). Everything else comes from each backend's own environment (DOCKER_HOST,
 * KUBECONFIG, Modal's token variables or ~/.modal.toml), as its package documents.
 */
export function addBackendOptions(command: Command, { mirror = true, sandboxes = true } = {}): Command {
  command
    .option('--backend <name>', 'docker, k8s or modal (k8s and modal are separate packages)', 'docker')
    .option('--kubeconfig <file>', 'k8s: the kubeconfig (default $KUBECONFIG, else ~/.kube/config)')
    .option('--context <name>', 'k8s: a context of the kubeconfig (default: its current context)')
    .option('-n, --namespace <ns>', "k8s: the namespace pods go into (default: the context's, else 'default'; berth says which)");
  // What only making sandboxes uses (sweep makes none): not offered where it would be ignored.
  if (!sandboxes) return command;
  command
    .option(
      '--build-repository <repo>',
      'k8s: build environment/Dockerfile images with the local Docker engine and push them to this repository (e.g. registry.example/team/berth-builds), for the cluster to pull; default $BERTH_BUILD_REPOSITORY',
    )
    .option(
      '--network-probe <host:port>',
      "k8s: an address every public pod reaches, for checking a pod's network from inside (offline tasks; default: the API server's service)",
    );
  if (mirror) command.option('--mirror <from=to>', 'pull images starting with <from> from <to> instead (repeatable)', collect);
  return command;
}

type Factory = (options: Record<string, unknown>) => Backend;

function isMissing(error: unknown, pkg: string): boolean {
  const e = error as NodeJS.ErrnoException;
  return (e?.code === 'ERR_MODULE_NOT_FOUND' || e?.code === 'MODULE_NOT_FOUND') && String(e.message).includes(pkg);
}

/** Backends linked in rather than installed (a bundle of berth holds them all): tried first. */
const linked: Partial<Record<BackendName, () => Promise<Record<string, unknown>>>> = {};

/** For a bundle of berth: its own copies of the backend packages, loaded when first named. */
export function linkBackends(loaders: Partial<Record<BackendName, () => Promise<Record<string, unknown>>>>): void {
  Object.assign(linked, loaders);
}

async function importBackend(name: BackendName): Promise<Record<string, unknown>> {
  const { pkg } = BACKENDS[name];
  const link = linked[name];
  if (link) return link();
  try {
    return (await import(pkg)) as Record<string, unknown>;
  } catch (error) {
    if (isMissing(error, pkg)) throw new UsageError(`the ${name} backend is not installed: run \`npm install ${pkg}\` beside @berth/cli, then try again`);
    throw error;
  }
}

/** --network-probe's host:port (an IPv6 host in brackets). */
function parseProbe(text: string): { host: string; port: number } {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:\s]+):(\d{1,5})$/.exec(text);
  const port = Number(m?.[2]);
  if (!m || port < 1 || port > 65535) throw new UsageError(`--network-probe wants host:port (e.g. 10.0.0.1:443), got "${text}"`);
  return { host: (m[1] as string).replace(/^\[|\]$/g, ''), port };
}

/** The k8s options the flags give: kubeconfig source, namespace, and a builder that pushes where the cluster pulls. */
async function k8sOptions(flags: BackendFlags, env: NodeJS.ProcessEnv): Promise<Record<string, unknown>> {
  const options: Record<string, unknown> = {};
  if (flags.kubeconfig || flags.context)
    options.kubeconfig = { ...(flags.kubeconfig ? { file: flags.kubeconfig } : {}), ...(flags.context ? { context: flags.context } : {}) };
  if (flags.namespace) options.namespace = flags.namespace;
  if (flags.networkProbe) options.networkPolicy = { probe: parseProbe(flags.networkProbe) };
  const repository = flags.buildRepository ?? env.BERTH_BUILD_REPOSITORY;
  if (repository) {
    const docker = await importBackend('docker');
    const create = docker.createRegistryImageBuilder as ((o: { repository: string }) => ImageBuilder) | undefined;
    if (typeof create !== 'function')
      throw new UsageError('@berth/backend-docker does not export createRegistryImageBuilder: is it the same version as @berth/cli?');
    try {
      options.builder = create({ repository });
    } catch (error) {
      throw new UsageError(`--build-repository: ${(error as Error).message.replace(/^repository /, '')}`);
    }
  }
  return options;
}

/**
 * The backend named on the command line, loaded by package name: only Docker comes with the CLI;
 * k8s and modal are separate packages, and a missing one is a usage error that says how to add it.
 */
export async function loadBackend(flags: BackendFlags, env: NodeJS.ProcessEnv = process.env): Promise<Backend> {
  const name = flags.backend;
  if (!(name in BACKENDS)) throw new UsageError(`unknown backend "${name}": choose one of ${BACKEND_NAMES.join(', ')}`);
  if (name !== 'k8s') {
    const misplaced = K8S_FLAGS.filter(([key]) => flags[key] !== undefined).map(([, flag]) => flag);
    if (misplaced.length > 0) throw new UsageError(`${misplaced.join(', ')} ${misplaced.length > 1 ? 'are' : 'is'} for --backend k8s, not --backend ${name}`);
  }
  const module = await importBackend(name as BackendName);
  const { pkg, factory } = BACKENDS[name as BackendName];
  const create = module[factory] as Factory | undefined;
  if (typeof create !== 'function') throw new UsageError(`${pkg} does not export ${factory}: is it a berth backend package of the same version as @berth/cli?`);
  const mirrors: readonly MirrorRule[] = mirrorRules(flags.mirror);
  const options: Record<string, unknown> = { ...(mirrors.length > 0 ? { mirrors } : {}), ...(name === 'k8s' ? await k8sOptions(flags, env) : {}) };
  return create(options);
}

/**
 * A backend from library options, as `berth serve` gets them from its client (harbor's plugin):
 * the backend's own option names; `buildRepository` makes the registry builder (k8s). Mistakes
 * are ConfigErrors naming the param, which the client says in its own words.
 */
export async function backendFromOptions(name: string, options: Record<string, unknown>, buildRepository?: string): Promise<Backend> {
  if (!(name in BACKENDS))
    throw new ConfigError({ operation: 'config', path: 'params.backend', message: `unknown backend "${name}": choose one of ${BACKEND_NAMES.join(', ')}` });
  let module: Record<string, unknown>;
  try {
    module = await importBackend(name as BackendName);
  } catch (error) {
    throw new ConfigError({ operation: 'config', path: 'params.backend', message: (error as Error).message, cause: error });
  }
  const { factory } = BACKENDS[name as BackendName];
  const create = module[factory] as Factory;
  if (buildRepository === undefined) return create(options);
  const docker = await importBackend('docker');
  const builder = (docker.createRegistryImageBuilder as (o: { repository: string }) => ImageBuilder)({ repository: buildRepository });
  return create({ ...options, builder });
}
