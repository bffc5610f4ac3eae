import { CapabilityError, DEFAULT_BUILD_TIMEOUT_MS, sameNetwork, type Backend, type EnvironmentSpecInput } from '@berth/core';
import { resolveEnv, type HostEnv } from './env-template.js';
import { LABEL_TASK, taskLabelValue } from './labels.js';
import type { HarborNetwork, HarborTask, HarborVerifierEnvironment } from './task.js';

/** Extra spec fields for every task (merged one level deep), or a function that rewrites the spec. */
export type SpecOverrides = Partial<EnvironmentSpecInput> | ((spec: EnvironmentSpecInput, task: HarborTask) => EnvironmentSpecInput);

export interface BuiltSpec {
  spec: EnvironmentSpecInput;
  /** task.toml settings that were deliberately not applied, and why (written to result.json). */
  notes: string[];
}

/** What result.json says the sandbox was made with: settings and env names, never env values. */
export interface ResolvedEnvironment {
  image: string | { build: { context: string; dockerfile: string; timeoutSec: number } };
  network: { environment: HarborNetwork; agent: HarborNetwork; verifier: HarborNetwork; switched: boolean };
  env: { environment: string[]; verifier: string[]; solution: string[] };
  resources: { cpus?: number; memoryMb?: number; storageMb?: number; gpus?: number; gpuTypes?: string[] };
  users: { agent?: string; verifier?: string };
  workdir?: string;
  timeouts: { agentSec: number | null; verifierSec: number; buildSec?: number };
  healthcheck?: string;
  /** A multi-step task's steps, each with what it runs with (env names never values). */
  steps?: Array<{
    name: string;
    network: { agent: HarborNetwork; verifier: HarborNetwork };
    users: { agent?: string; verifier?: string };
    timeouts: { agentSec: number | null; verifierSec: number };
    verifierEnv: string[];
    minReward?: number | Record<string, number>;
  }>;
  /** A separate verifier's sandbox (`environment_mode = "separate"`). */
  verifierSandbox?: {
    image: string | { build: { context: string; dockerfile: string; timeoutSec: number } };
    testsBundled: boolean;
    network: HarborNetwork;
    env: string[];
    resources: HarborTask['resources'];
    workdir?: string;
  };
}

function imageRecord(image: HarborTask['image'], buildTimeoutSec: number): ResolvedEnvironment['image'] {
  return 'ref' in image ? image.ref : { build: { ...image.build, timeoutSec: buildTimeoutSec } };
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

/** Does any phase run on another network than the rest? Then the sandbox switches between them. */
export function switchesNetwork(task: HarborTask): boolean {
  const { environment, agent, verifier } = task.network;
  // A multi-step task's phases are its steps' (each verified in the agent's sandbox).
  if (task.steps) return task.steps.some((step) => !sameNetwork(step.network.agent, environment) || !sameNetwork(step.network.verifier, environment));
  // A separate verifier has a sandbox of its own, made on its network.
  return !sameNetwork(agent, environment) || (task.verifierEnvironment === undefined && !sameNetwork(verifier, environment));
}

/**
 * The environment spec of a task, as harbor would run it: the image (pulled, or built from
 * environment/Dockerfile with build_timeout_sec), resources, `[environment.env]` resolved from the
 * host, the workdir, and the network of the environment phase; when the agent's or the
 * verifier's network differs, the sandbox is made switchable (a backend that cannot switch
 * refuses the task rather than run a phase on the wrong network).
 *
 * storage_mb is a ceiling harbor writes into almost every task.toml and its own Docker
 * environment does not enforce: it is requested only where the backend can honour it and
 * otherwise recorded in `notes`. gpus is a requirement: a backend without GPUs refuses the task;
 * gpu_types goes along as resources.gpuTypes (any of them).
 */
export function buildSpec(
  task: HarborTask,
  backend: Pick<Backend, 'capabilities' | 'name'>,
  overrides?: SpecOverrides,
  hostEnv: HostEnv = process.env,
): BuiltSpec {
  const switched = switchesNetwork(task);
  if (switched && !backend.capabilities.networkSwitch) {
    const { environment, agent, verifier } = task.network;
    throw new CapabilityError({
      operation: 'config',
      backend: backend.name,
      capability: 'networkSwitch',
      message: `task ${task.id} runs with network ${environment}, its agent with ${agent} and its verifier with ${verifier}; the ${backend.name} backend cannot switch a sandbox's network between phases, and running a phase on another network would change the task. Use a backend that can (berth's Docker, Kubernetes and Modal backends all do), or one network_mode for the whole task`,
    });
  }
  const phases = [task.users, ...(task.steps ?? []).map((step) => step.users)].flatMap((users) => Object.entries(users));
  const users = [...new Map(phases.filter(([, user]) => user !== undefined && user !== '0' && user !== 'root').map((e) => [e.join(':'), e])).values()];
  if (users.length > 0 && !backend.capabilities.execUser) {
    throw new CapabilityError({
      operation: 'config',
      backend: backend.name,
      capability: 'execUser',
      message: `task ${task.id} runs its ${users.map(([phase, user]) => `${phase} as user "${user}"`).join(' and its ')}; the ${backend.name} backend cannot run a command as another user. Use a backend that can (berth's Docker, Kubernetes and Modal backends all do), or an image whose default user is the one the task needs`,
    });
  }
  const sandbox = {
    image: task.image,
    buildTimeoutSec: task.buildTimeoutSec,
    resources: task.resources,
    env: task.env.environment,
    ...(task.workdir ? { workdir: task.workdir } : {}),
    ...(task.services ? { services: task.services, ...(task.dependsOn ? { dependsOn: task.dependsOn } : {}) } : {}),
    ...(task.volumes ? { volumes: task.volumes } : {}),
  };
  return sandboxSpec(task, sandbox, 'environment', { network: task.network.environment, networkSwitch: switched }, backend, overrides, hostEnv);
}

/** The spec of a separate verifier's sandbox: on the verifier's network from the start (it runs nothing else). */
export function buildVerifierSpec(
  task: HarborTask,
  backend: Pick<Backend, 'capabilities' | 'name'>,
  overrides?: SpecOverrides,
  hostEnv: HostEnv = process.env,
): BuiltSpec {
  const v = task.verifierEnvironment;
  if (!v) throw new Error(`task ${task.id} has no separate verifier environment`);
  const field = 'verifier.environment';
  return sandboxSpec(task, v, field, { network: task.network.verifier, networkSwitch: false }, backend, overrides, hostEnv);
}

interface SandboxDescription {
  image: HarborTask['image'];
  buildTimeoutSec: number;
  resources: HarborTask['resources'];
  env: Readonly<Record<string, string>>;
  workdir?: string;
  services?: HarborTask['services'];
  dependsOn?: HarborTask['dependsOn'];
  volumes?: HarborTask['volumes'];
}

function sandboxSpec(
  task: HarborTask,
  sandbox: SandboxDescription,
  field: string,
  net: { network: HarborNetwork; networkSwitch: boolean },
  backend: Pick<Backend, 'capabilities' | 'name'>,
  overrides: SpecOverrides | undefined,
  hostEnv: HostEnv,
): BuiltSpec {
  const notes: string[] = [];
  const resources: NonNullable<EnvironmentSpecInput['resources']> = {};
  if (sandbox.resources.cpus !== undefined) resources.cpus = sandbox.resources.cpus;
  if (sandbox.resources.memoryMb !== undefined) resources.memoryMb = sandbox.resources.memoryMb;
  if (sandbox.resources.storageMb !== undefined) {
    if (backend.capabilities.resourceLimits.storage) resources.storageMb = sandbox.resources.storageMb;
    else
      notes.push(
        `storage limit of ${sandbox.resources.storageMb} MiB not applied: the ${backend.name} backend cannot limit storage (harbor's Docker environment does not either)`,
      );
  }
  if ((sandbox.resources.gpus ?? 0) > 0) {
    resources.gpus = sandbox.resources.gpus;
    // Any of them: a backend that cannot choose the model refuses the task (gpuTypes capability).
    if (sandbox.resources.gpuTypes?.length) resources.gpuTypes = [...sandbox.resources.gpuTypes];
  }
  const image = 'ref' in sandbox.image ? sandbox.image.ref : { build: { ...sandbox.image.build, timeoutMs: sandbox.buildTimeoutSec * 1000 } };
  const spec: EnvironmentSpecInput = {
    image,
    resources,
    network: net.network,
    ...(net.networkSwitch ? { networkSwitch: true } : {}),
    env: resolveEnv(task.configPath, `${field}.env`, sandbox.env, hostEnv),
    ...(sandbox.workdir ? { workdir: sandbox.workdir } : {}),
    ...(sandbox.services ? { services: sandbox.services } : {}),
    ...(sandbox.dependsOn ? { dependsOn: sandbox.dependsOn } : {}),
    ...(sandbox.volumes ? { mounts: [...sandbox.volumes] } : {}),
    labels: { [LABEL_TASK]: taskLabelValue(task.id) },
  };
  if (overrides === undefined) return { spec, notes };
  return { spec: typeof overrides === 'function' ? overrides(spec, task) : merge(spec, overrides), notes };
}

/** The record of what a task's sandbox was made with, for result.json (a separate verifier's: `verifierSandbox`). */
export function resolvedEnvironment(task: HarborTask, spec: EnvironmentSpecInput): ResolvedEnvironment {
  const image = spec.image;
  return {
    image:
      typeof image === 'string'
        ? image
        : 'ref' in image
          ? image.ref
          : {
              build: {
                context: image.build.context,
                dockerfile: image.build.dockerfile ?? 'Dockerfile',
                timeoutSec: (image.build.timeoutMs ?? DEFAULT_BUILD_TIMEOUT_MS) / 1000,
              },
            },
    network: { ...task.network, switched: spec.networkSwitch === true },
    env: {
      environment: Object.keys(spec.env ?? {}).sort(),
      verifier: Object.keys(task.env.verifier).sort(),
      solution: Object.keys(task.env.solution).sort(),
    },
    resources: { ...spec.resources },
    users: { ...task.users },
    ...(task.workdir ? { workdir: task.workdir } : {}),
    timeouts: {
      agentSec: task.agentTimeoutSec ?? null,
      verifierSec: task.verifierTimeoutSec,
      ...('build' in task.image ? { buildSec: task.buildTimeoutSec } : {}),
    },
    ...(task.healthcheck ? { healthcheck: task.healthcheck.command } : {}),
    ...(task.verifierEnvironment ? { verifierSandbox: verifierRecord(task, task.verifierEnvironment) } : {}),
    ...(task.steps
      ? {
          steps: task.steps.map((step) => ({
            name: step.name,
            network: { ...step.network },
            users: { ...step.users },
            timeouts: { agentSec: step.agentTimeoutSec ?? null, verifierSec: step.verifierTimeoutSec },
            verifierEnv: [...new Set([...Object.keys(task.env.verifier), ...Object.keys(step.verifierEnv)])].sort(),
            ...(step.minReward !== undefined ? { minReward: step.minReward } : {}),
          })),
        }
      : {}),
  };
}

function verifierRecord(task: HarborTask, v: HarborVerifierEnvironment): NonNullable<ResolvedEnvironment['verifierSandbox']> {
  return {
    image: imageRecord(v.image, v.buildTimeoutSec),
    testsBundled: v.testsBundled,
    network: task.network.verifier,
    env: Object.keys(v.env).sort(),
    resources: { ...v.resources },
    ...(v.workdir ? { workdir: v.workdir } : {}),
  };
}
