import type { Capabilities, CapabilityHints, ExecOptions } from '../contract.js';

export type { CapabilityHints };
import { CapabilityError, hintRemedy, hintText, type Operation } from '../errors.js';
import { isBuiltImage, type EnvironmentSpec } from '../spec.js';
import { allowEntries, describeNetwork, isAllowlist } from '../network-allowlist.js';
import type { NetworkMode } from '../contract.js';

/**
 * For backends whose exec has no user (the execUser capability false): a command asked to run as
 * anyone but root is a CapabilityError saying why (`reason`), never silently run as root.
 */
export function refuseExecUser(user: string | undefined, ctx: { operation: Operation; backend: string; environmentId?: string }, reason: string): void {
  if (user === undefined || user === '0' || user === 'root' || user.startsWith('0:')) return;
  throw new CapabilityError({ ...ctx, capability: 'exec.user', message: `the ${ctx.backend} backend cannot run a command as user "${user}": ${reason}` });
}

/**
 * A command asking for a terminal (`opts.tty`) on a backend that does not claim the tty capability
 * is a CapabilityError, never run without the terminal it asked for (its output and its behaviour
 * would differ). SandboxEnvironment calls it for every exec, so no transport ever sees such a request.
 */
export function refuseExecTty(
  tty: ExecOptions['tty'],
  capabilities: Pick<Capabilities, 'tty'> | undefined,
  ctx: { operation: Operation; backend: string; environmentId?: string },
): void {
  if (tty === undefined || tty === false || capabilities?.tty === true) return;
  throw new CapabilityError({
    ...ctx,
    capability: 'exec.tty',
    message: `the ${ctx.backend} backend cannot give a command a terminal (opts.tty); run it without one, or on a backend that claims the tty capability`,
  });
}

/**
 * Refuse a spec that asks for what the backend says it cannot do, before any I/O: a CapabilityError
 * beats a request silently ignored (a GPU task run without GPUs scores a fake zero).
 */
export function assertSupported(spec: EnvironmentSpec, capabilities: Capabilities, backend: string, hints: CapabilityHints = {}): void {
  const refuse = (capability: keyof CapabilityHints, what: string, fallback: string) =>
    new CapabilityError({
      operation: 'config',
      backend,
      capability,
      ...hintRemedy(hints[capability]),
      message: `the ${backend} backend ${what}; ${hintText(hints[capability]) ?? fallback}`,
    });
  if (isBuiltImage(spec.image) && !capabilities.imageBuild) {
    throw refuse(
      'imageBuild',
      `cannot build images (spec.image.build, from ${spec.image.build.context})`,
      'build and push the image, then pass its reference as spec.image',
    );
  }
  if ((spec.resources.gpus ?? 0) > 0 && !capabilities.gpus) {
    throw refuse('gpus', 'does not provide GPUs', 'use a backend that does, or set resources.gpus to 0');
  }
  if (spec.resources.gpuTypes !== undefined && !capabilities.gpuTypes) {
    throw refuse(
      'gpuTypes',
      `cannot choose the GPU model (resources.gpuTypes: ${spec.resources.gpuTypes.join(', ')})`,
      'leave resources.gpuTypes out to take any GPU, or use a backend that can choose',
    );
  }
  refuseNetwork(spec.network, capabilities, backend, hints, 'spec.network');
  if (spec.networkSwitch && !capabilities.networkSwitch) {
    throw refuse('networkSwitch', "cannot switch a running sandbox's network (spec.networkSwitch)", 'run the whole task with one network');
  }
  if (spec.resources.storageMb !== undefined && !capabilities.resourceLimits.storage) {
    throw refuse('resources.storage', 'cannot limit storage (resources.storageMb)', 'leave it unset for this backend');
  }
  for (const [name, service] of Object.entries(spec.services)) {
    if (service.mounts.length > 0 && !capabilities.mounts.includes('volume'))
      throw refuse(
        'mounts.volume',
        `cannot share volumes between a sandbox and its services (spec.services.${name}.mounts)`,
        'share files through a service of its own instead',
      );
    if (isBuiltImage(service.image) && !capabilities.imageBuild)
      throw refuse(
        'imageBuild',
        `cannot build images (spec.services.${name}.image.build, from ${service.image.build.context})`,
        'build and push the image, then pass its reference',
      );
  }
  const services = Object.keys(spec.services);
  if (services.length > 0 && !capabilities.services) {
    throw refuse(
      'services',
      `cannot run services beside the sandbox (spec.services: ${services.join(', ')})`,
      'fold the services into the image, or run the task on a backend that runs services',
    );
  }
  for (const mount of spec.mounts) {
    if (!capabilities.mounts.includes(mount.type)) {
      throw refuse(`mounts.${mount.type}`, `cannot make ${mount.type} mounts (${mount.target})`, 'remove the mount or use a backend that supports it');
    }
  }
}

/**
 * A network the backend cannot enforce, refused by name before any I/O: a mode it lacks, an
 * allowlist on a backend without the networkAllowlist capability, or entries of a kind its
 * enforcement cannot hold (names, wildcards). `where` names the field: spec.network or setNetwork's mode.
 */
export function refuseNetwork(
  network: NetworkMode,
  capabilities: Pick<Capabilities, 'networkModes' | 'networkAllowlist'>,
  backend: string,
  hints: CapabilityHints = {},
  where = 'spec.network',
): void {
  // What the backend says instead, under the capability's own name.
  const refuse = (capability: 'network' | 'network.allowlist' | 'network.allowlist.names' | 'network.allowlist.wildcards', what: string, fallback: string) =>
    new CapabilityError({
      operation: 'config',
      backend,
      capability,
      ...hintRemedy(hints[capability]),
      message: `the ${backend} backend ${what} (${where}); ${hintText(hints[capability]) ?? fallback}`,
    });
  if (!isAllowlist(network)) {
    if (!capabilities.networkModes.includes(network))
      throw refuse('network', `does not support network ${describeNetwork(network)}`, `use one of: ${capabilities.networkModes.join(', ')}`);
    return;
  }
  const enforcement = capabilities.networkAllowlist;
  if (!enforcement) {
    throw refuse('network.allowlist', 'cannot enforce an egress allowlist', `use network 'public' or 'none', or a backend that enforces allowlists`);
  }
  const entries = allowEntries(network);
  const names = entries.filter((e) => e.kind === 'host' || e.kind === 'wildcard');
  if (names.length > 0 && enforcement.names === false) {
    throw refuse(
      'network.allowlist.names',
      `enforces allowlists by address only and cannot allow a hostname (${names.map((e) => (e.kind === 'host' ? e.host : `*.${e.suffix}`)).join(', ')})`,
      'list the addresses or ranges instead',
    );
  }
  const wildcards = entries.filter((e) => e.kind === 'wildcard');
  if (wildcards.length > 0 && !enforcement.wildcards) {
    throw refuse(
      'network.allowlist.wildcards',
      `cannot enforce wildcard entries (${wildcards.map((e) => (e.kind === 'wildcard' ? `*.${e.suffix}` : '')).join(', ')}): it ${enforcement.names === 'resolved' ? 'resolves names to addresses, and a wildcard has none' : 'matches exact names only'}`,
      'list each hostname instead',
    );
  }
}
