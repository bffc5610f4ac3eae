import { CapabilityError, NetworkAllowlistSchema, parseAllowEntry } from '@berth/core';
import {
  DEFAULT_BUILD_TIMEOUT_SEC,
  type HarborArtifact,
  type HarborHealthcheck,
  type HarborNetwork,
  type HarborTask,
  type HarborVerifierEnvironment,
} from './task.js';
import { fieldError, likelyMeant, parseVerifierEnvironment, unknownFields, type EnvironmentTable, type TaskToml } from './task-toml.js';

// What task.toml's settings mean, as harbor (0.26) applies them; pure functions over the parsed
// file. Whatever changes what runs and berth cannot do is refused here, naming the field.

function unsupported(file: string, capability: string, message: string): CapabilityError {
  return new CapabilityError({ operation: 'config', capability, message: `${file}: ${message}` });
}

/**
 * One table's network, as harbor reads it: `network_mode` ("public", "no-network" as 'none', or
 * "allowlist" with `allowed_hosts`: an allowlist, each entry checked as harbor does), else
 * `fallback`. `allowed_hosts` without "allowlist" is harbor's error too (a baseline table's empty
 * list is let through, as harbor does). Whether a backend can enforce the allowlist is its
 * capability's business, refused by name when the spec is made.
 */
export function phaseNetwork(
  file: string,
  field: string,
  table: { network_mode?: string | undefined; allowed_hosts?: readonly string[] | undefined },
  fallback: HarborNetwork,
  baseline = false,
): HarborNetwork {
  const { network_mode: mode, allowed_hosts: hosts } = table;
  if (hosts !== undefined && mode !== 'allowlist' && !(baseline && hosts.length === 0)) {
    throw fieldError(file, `${field}.allowed_hosts`, `is only valid with ${field}.network_mode = "allowlist" (harbor refuses it too)`);
  }
  if (mode === undefined) return fallback;
  if (mode !== 'allowlist') return mode === 'public' ? 'public' : 'none';
  (hosts ?? []).forEach((entry, index) => {
    const parsed = parseAllowEntry(entry);
    if ('problem' in parsed) throw fieldError(file, `${field}.allowed_hosts[${index}]`, parsed.problem);
  });
  return NetworkAllowlistSchema.parse({ allow: hosts ?? [] });
}

/**
 * The network of each phase. The baseline is `[environment] network_mode`, else the deprecated
 * `allow_internet` (false: no network), else public (harbor's default); `[agent]` and
 * `[verifier]` network_mode override it while their phase runs.
 */
export function phaseNetworks(file: string, toml: TaskToml, separate?: EnvironmentTable): HarborTask['network'] {
  const env = toml.environment;
  const baselineOf = (field: string, table: EnvironmentTable) => phaseNetwork(file, field, table, table.allow_internet === false ? 'none' : 'public', true);
  const baseline = baselineOf('environment', env);
  // A separate verifier's phase falls back on its own sandbox's network, not the agent's.
  const verifierBaseline = separate ? baselineOf('verifier.environment', separate) : baseline;
  return {
    environment: baseline,
    agent: phaseNetwork(file, 'agent', toml.agent, baseline),
    verifier: phaseNetwork(file, 'verifier', toml.verifier, verifierBaseline),
  };
}

/** What no berth backend runs, in `[environment]` or `[verifier.environment]`. */
function refuseEnvironment(file: string, at: string, env: EnvironmentTable): void {
  if (env.os !== undefined && env.os.toLowerCase() === 'windows') {
    throw unsupported(file, 'os.windows', `${at}.os = "windows" needs Windows containers, which no berth backend runs`);
  }
  if (env.tpu !== undefined) throw unsupported(file, 'tpu', `${at}.tpu asks for TPUs, which no berth backend provides`);
  const badType = (env.gpus ?? 0) > 0 ? env.gpu_types?.find((t) => !/^[^\s:,]+$/.test(t)) : undefined;
  if (badType !== undefined) {
    throw fieldError(file, `${at}.gpu_types`, `holds ${JSON.stringify(badType)}: each entry is one GPU type such as "H100" (the count is ${at}.gpus)`);
  }
}

/** Is the verifier's sandbox its own? (harbor: "separate" when `[verifier.environment]` is there, unless said otherwise.) */
export function separateVerifier(file: string, toml: TaskToml): boolean {
  const v = toml.verifier;
  if (v.environment_mode === 'shared' && v.environment !== undefined) {
    throw fieldError(file, 'verifier.environment', 'cannot go with environment_mode = "shared" (harbor refuses it too)');
  }
  return v.environment_mode === 'separate' || (v.environment_mode === undefined && v.environment !== undefined);
}

/**
 * Settings berth does not run, refused with what to do instead: a silently different environment
 * is how fake zeros are born.
 */
export function refuseUnsupported(file: string, toml: TaskToml): void {
  refuseEnvironment(file, 'environment', toml.environment);
  refuseArtifactServices(file, toml.artifacts ?? [], 'artifacts');
}

/** An `artifacts` entry from a compose service other than "main": berth runs one sandbox. */
export function refuseArtifactServices(file: string, entries: NonNullable<TaskToml['artifacts']>, at: string): void {
  for (const [i, entry] of entries.entries()) {
    if (typeof entry === 'object' && entry.service !== undefined && entry.service !== 'main') {
      throw fieldError(file, `${at}[${i}].service`, `names the compose service "${entry.service}"; berth runs one sandbox ("main")`);
    }
  }
}

/** `gpu_types` as harbor reads it: any of them, only with gpus > 0; an empty list is any GPU. */
export function gpuTypesOf(env: EnvironmentTable): { gpuTypes?: string[] } {
  return (env.gpus ?? 0) > 0 && env.gpu_types?.length ? { gpuTypes: [...env.gpu_types] } : {};
}

export function healthcheckOf(env: Pick<EnvironmentTable, 'healthcheck'>): HarborHealthcheck | undefined {
  const h = env.healthcheck;
  if (!h) return undefined;
  return {
    command: h.command,
    intervalSec: h.interval_sec ?? 5,
    timeoutSec: h.timeout_sec ?? 30,
    startPeriodSec: h.start_period_sec ?? 0,
    startIntervalSec: h.start_interval_sec ?? 5,
    retries: h.retries ?? 3,
  };
}

export function artifactsOf(file: string, toml: TaskToml, notes: string[], entries = toml.artifacts ?? [], at = 'artifacts'): HarborArtifact[] {
  return entries.map((entry, i) => {
    const source = typeof entry === 'string' ? entry : entry.source;
    const destination = typeof entry === 'string' ? undefined : entry.destination;
    if (source.split('/').includes('..')) throw fieldError(file, `${at}[${i}]`, `must not contain "..", got ${JSON.stringify(source)}`);
    if (destination !== undefined && (destination.startsWith('/') || destination.split('/').includes('..'))) {
      throw fieldError(file, `${at}[${i}].destination`, `must be a relative path without "..", got ${JSON.stringify(destination)}`);
    }
    if (typeof entry === 'object' && entry.exclude?.length) notes.push(`${at}[${i}].exclude not applied: ${source} is downloaded whole`);
    return { source, ...(destination ? { destination } : {}) };
  });
}

/** Notes for what is accepted without changing what runs. */
export function acceptedNotes(root: Record<string, unknown>, toml: TaskToml): string[] {
  const notes = unknownFields(root).map((field) => {
    const meant = likelyMeant(field);
    return `${field} is not a harbor task.toml field: ignored (harbor ignores it too)${meant ? `; did you mean ${meant}?` : ''}`;
  });
  const env = toml.environment;
  if (env.gpu_types !== undefined && !((env.gpus ?? 0) > 0))
    notes.push(`environment.gpu_types (${env.gpu_types.join(', ')}) ignored: the task asks for no GPUs`);
  if (env.memory !== undefined && typeof env.memory !== 'string') {
    notes.push(
      `environment.memory = ${String(env.memory)} is not a size string; harbor drops it, so no memory limit comes from it (write memory_mb to set one)`,
    );
  }
  if (env.storage !== undefined && typeof env.storage !== 'string') {
    notes.push(`environment.storage = ${String(env.storage)} is not a size string; harbor drops it, so no storage limit comes from it`);
  }
  if (env.mcp_servers?.length)
    notes.push(`environment.mcp_servers (${env.mcp_servers.length}) are given to agent functions as task.agentConfig.mcpServers; the oracle does not use them`);
  if (env.skills_dir !== undefined) notes.push(`environment.skills_dir is given to agent functions as task.agentConfig.skillsDir; the oracle does not use it`);
  const verifierEnv = (root.verifier as Record<string, unknown> | undefined)?.environment as Record<string, unknown> | undefined;
  const agentOnly = ['mcp_servers', 'skills_dir'].filter(
    (k) => verifierEnv?.[k] !== undefined && !(Array.isArray(verifierEnv[k]) && (verifierEnv[k] as unknown[]).length === 0),
  );
  for (const key of agentOnly) notes.push(`verifier.environment.${key} ignored: the verifier's sandbox runs no agent`);
  return notes;
}

/**
 * The table a separate verifier's sandbox is made from: `[verifier.environment]`, or a copy of
 * `[environment]` when the task has none; refused where berth cannot run it.
 */
export function verifierTable(file: string, toml: TaskToml): EnvironmentTable {
  const table = toml.verifier.environment !== undefined ? parseVerifierEnvironment(file, toml.verifier.environment) : toml.environment;
  refuseEnvironment(file, 'verifier.environment', table);
  return table;
}

/**
 * A separate verifier's sandbox, in harbor's order: the `[verifier.environment]` image (tests
 * inside it), else tests/Dockerfile (built from tests/, tests inside), else the agent's image with
 * tests uploaded. Resources, env, workdir and healthcheck come from the table.
 */
export function verifierEnvironmentOf(
  table: EnvironmentTable,
  fromVerifierTable: boolean,
  testsDockerfile: string | undefined,
  agentImage: HarborTask['image'],
  sizes: { memoryMb?: number; storageMb?: number },
): HarborVerifierEnvironment {
  const image: HarborVerifierEnvironment['image'] =
    fromVerifierTable && table.docker_image
      ? { ref: table.docker_image }
      : testsDockerfile
        ? { build: { context: testsDockerfile, dockerfile: 'Dockerfile' } }
        : agentImage;
  const healthcheck = healthcheckOf(table);
  return {
    image,
    testsBundled: image !== agentImage,
    buildTimeoutSec: table.build_timeout_sec ?? DEFAULT_BUILD_TIMEOUT_SEC,
    resources: {
      ...(table.cpus !== undefined ? { cpus: table.cpus } : {}),
      ...(sizes.memoryMb !== undefined ? { memoryMb: sizes.memoryMb } : {}),
      ...(sizes.storageMb !== undefined ? { storageMb: sizes.storageMb } : {}),
      ...(table.gpus !== undefined ? { gpus: table.gpus } : {}),
      ...gpuTypesOf(table),
    },
    env: table.env ?? {},
    ...(table.workdir !== undefined ? { workdir: table.workdir } : {}),
    ...(healthcheck ? { healthcheck } : {}),
  };
}
