import type { Backend, EnvironmentSpecInput } from '@berth/core';
import { LABEL_TASK, taskLabelValue } from './labels.js';
import type { HarborTask } from './task.js';

/** Extra spec fields for every task (merged one level deep), or a function that rewrites the spec. */
export type SpecOverrides =
  | Partial<EnvironmentSpecInput>
  | ((spec: EnvironmentSpecInput, task: HarborTask) => EnvironmentSpecInput);

export interface BuiltSpec {
  spec: EnvironmentSpecInput;
  /** task.toml settings that were deliberately not applied, and why (written to result.json). */
  notes: string[];
}

function merge(base: EnvironmentSpecInput, extra: Partial<EnvironmentSpecInput>): EnvironmentSpecInput {
  const out: EnvironmentSpecInput = { ...base, ...extra };
  // Tables merge rather than replace, so an override of one resource keeps the task's others.
  for (const key of ['resources', 'labels', 'timeouts', 'env'] as const) {
    if (base[key] !== undefined || extra[key] !== undefined) {
      (out as Record<string, unknown>)[key] = { ...(base[key] ?? {}), ...(extra[key] ?? {}) };
    }
  }
  return out;
}

/**
 * The environment spec of a task. Resources come from task.toml. The network is 'none' unless the
 * task says allow_internet = true: a verifier must not reach the internet by accident.
 *
 * storage_mb is a ceiling harbor writes into almost every task.toml. A backend that cannot enforce
 * it would refuse the whole spec (CapabilityError), making the task unrunnable there, so it is
 * requested only where the backend can honour it and otherwise recorded in `notes`. gpus is a
 * requirement, not a ceiling: a task that needs GPUs is passed on, and a backend without them
 * refuses it (permanent infra) rather than running it wrong.
 */
export function buildSpec(task: HarborTask, backend: Pick<Backend, 'capabilities' | 'name'>, overrides?: SpecOverrides): BuiltSpec {
  const notes: string[] = [];
  const resources: NonNullable<EnvironmentSpecInput['resources']> = {};
  if (task.resources.cpus !== undefined) resources.cpus = task.resources.cpus;
  if (task.resources.memoryMb !== undefined) resources.memoryMb = task.resources.memoryMb;
  if (task.resources.storageMb !== undefined) {
    if (backend.capabilities.resourceLimits.storage) resources.storageMb = task.resources.storageMb;
    else notes.push(`storage limit of ${task.resources.storageMb} MiB not applied: the ${backend.name} backend cannot limit storage`);
  }
  if ((task.resources.gpus ?? 0) > 0) resources.gpus = task.resources.gpus;

  const spec: EnvironmentSpecInput = {
    image: task.image,
    resources,
    network: task.allowInternet ? 'public' : 'none',
    labels: { [LABEL_TASK]: taskLabelValue(task.id) },
  };
  if (overrides === undefined) return { spec, notes };
  return { spec: typeof overrides === 'function' ? overrides(spec, task) : merge(spec, overrides), notes };
}
