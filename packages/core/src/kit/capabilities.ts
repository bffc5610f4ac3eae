import type { Capabilities, CapabilityHints, ExecOptions } from '../contract.js';

export type { CapabilityHints };
import { CapabilityError, hintRemedy, hintText, type Operation } from '../errors.js';
import { isBuiltImage, type EnvironmentSpec } from '../spec.js';

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
  if (!capabilities.networkModes.includes(spec.network)) {
    throw refuse('network', `does not support network '${spec.network}'`, `use one of: ${capabilities.networkModes.join(', ')}`);
  }
  if (spec.networkSwitch && !capabilities.networkSwitch) {
    throw refuse('networkSwitch', "cannot switch a running sandbox's network (spec.networkSwitch)", 'run the whole task with one network');
  }
  if (spec.resources.storageMb !== undefined && !capabilities.resourceLimits.storage) {
    throw refuse('resources.storage', 'cannot limit storage (resources.storageMb)', 'leave it unset for this backend');
  }
  for (const mount of spec.mounts) {
    if (!capabilities.mounts.includes(mount.type)) {
      throw refuse(`mounts.${mount.type}`, `cannot make ${mount.type} mounts (${mount.target})`, 'remove the mount or use a backend that supports it');
    }
  }
}
