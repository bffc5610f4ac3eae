import { readFile, readdir } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { ConfigError } from '@berth/core';
import { parse as parseToml } from 'smol-toml';
import { kindOf } from './path-kind.js';
import { parseSizeToMb } from './size.js';
import { taskContentHash } from './task-hash.js';
import { scriptProblems } from './task-preflight.js';
import { checkVariables, resolveEnv, type HostEnv } from './env-template.js';
import { readCompose } from './compose.js';
import { DEFAULT_BUILD_TIMEOUT_SEC, DEFAULT_VERIFIER_TIMEOUT_SEC, type HarborTask, type HarborVerifierEnvironment } from './task.js';
import {
  acceptedNotes,
  artifactsOf,
  healthcheckOf,
  phaseNetworks,
  refuseUnsupported,
  separateVerifier,
  verifierEnvironmentOf,
  verifierTable,
  gpuTypesOf,
} from './task-semantics.js';
import { fieldError, parseTaskToml, type EnvironmentTable, type TaskToml } from './task-toml.js';
import { stepsOf } from './task-steps.js';
import { collectCommandsOf } from './verifier-collect.js';

const optional = <K extends string, V>(key: K, value: V | undefined): Partial<Record<K, V>> => (value === undefined ? {} : ({ [key]: value } as Record<K, V>));

function configError(path: string, message: string, cause?: unknown): ConfigError {
  return new ConfigError({ operation: 'config', path, message, ...(cause === undefined ? {} : { cause }) });
}

/**
 * A size given either as `<key>_mb` (a whole number of MiB) or, the older compose way, as
 * `<key> = "2G"`. Both at once must agree, so that a task never runs with a limit it did not mean.
 * A non-string (`memory = 4096`) is dropped, as harbor drops it (acceptedNotes records it).
 */
function sizeMb(file: string, env: EnvironmentTable, key: 'memory' | 'storage', at = 'environment'): number | undefined {
  const mb = env[`${key}_mb`];
  const text = env[key];
  if (typeof text !== 'string') return mb;
  const parsed = parseSizeToMb(text);
  if (parsed === undefined) {
    throw fieldError(
      file,
      `${at}.${key}`,
      `must be a size with a unit such as "2G" or "512M", got ${JSON.stringify(text)} (for a plain number of megabytes use ${key}_mb)`,
    );
  }
  if (mb !== undefined && mb !== parsed) {
    throw fieldError(file, `${at}.${key}`, `(${parsed} MiB) disagrees with ${at}.${key}_mb (${mb}); give one of them`);
  }
  return parsed;
}

export interface LoadOptions {
  /** Where `${VAR}` templates in env tables are looked up. Default: process.env. */
  hostEnv?: HostEnv;
  /**
   * loadHarborTasks only: which task ids (directory names) to read. The others are not read at
   * all, so a task berth cannot run, or a helper folder, does not stop a selection without it.
   */
  filter?: (id: string) => boolean;
}

async function readToml(id: string, configPath: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(configPath, 'utf8');
  } catch (error) {
    throw configError('task.toml', `task ${id} has no readable task.toml (${configPath}): ${(error as Error).message}`, error);
  }
  try {
    return parseToml(text) as Record<string, unknown>;
  } catch (error) {
    // smol-toml's TomlError knows where; its message adds a code frame under the first line.
    const { line, column } = error as { line?: unknown; column?: unknown };
    const where = typeof line === 'number' ? ` at line ${line}${typeof column === 'number' ? `, column ${column}` : ''}` : '';
    throw configError('task.toml', `${configPath} is not valid TOML${where}: ${(error as Error).message}`, error);
  }
}

/** docker_image, else environment/Dockerfile (built with environment/ as its context). */
async function imageOf(file: string, taskDir: string, toml: TaskToml, notes: string[]): Promise<Pick<HarborTask, 'image' | 'environmentDir'>> {
  const envDir = join(taskDir, 'environment');
  const hasDockerfile = (await kindOf(join(envDir, 'Dockerfile'))) === 'file';
  const ref = toml.environment.docker_image;
  if (ref !== undefined) {
    if (hasDockerfile) notes.push('environment/Dockerfile not built: environment.docker_image is set (harbor uses the image too)');
    // Harbor copies a prebuilt task's environment/ into the workdir at start.
    const entries = !hasDockerfile && (await kindOf(envDir)) === 'dir' ? await readdir(envDir) : [];
    return { image: { ref }, ...(entries.length > 0 ? { environmentDir: envDir } : {}) };
  }
  if (hasDockerfile) return { image: { build: { context: envDir, dockerfile: 'Dockerfile' } } };
  const hint =
    typeof (toml.environment as Record<string, unknown>).image === 'string' ? ' (environment.image is not a harbor field: did you mean docker_image?)' : '';
  throw fieldError(file, 'environment.docker_image', `is missing and there is no environment/Dockerfile to build: give one of them${hint}`);
}

/**
 * Read one task directory in the harbor layout. The task id is the directory's name. Throws
 * ConfigError or CapabilityError (permanent: retrying cannot fix a task definition) naming the
 * file and field.
 */
export async function loadHarborTask(dir: string, options: LoadOptions = {}): Promise<HarborTask> {
  const taskDir = resolve(dir);
  const id = basename(taskDir);
  if ((await kindOf(taskDir)) !== 'dir') throw configError('task', `task directory ${taskDir} does not exist or is not a directory`);
  const configPath = join(taskDir, 'task.toml');
  const root = await readToml(id, configPath);
  const toml = parseTaskToml(configPath, root);
  // harbor reads exactly environment/docker-compose.yaml (definition.py's COMPOSE_FILE_NAME).
  const compose =
    (await kindOf(join(taskDir, 'environment', 'docker-compose.yaml'))) === 'file' ? join(taskDir, 'environment', 'docker-compose.yaml') : undefined;
  refuseUnsupported(configPath, toml);
  // A multi-step task verifies each step in the agent's sandbox (task-steps.ts refuses the rest).
  const multiStep = (toml.steps?.length ?? 0) > 0;
  const separate = !multiStep && separateVerifier(configPath, toml) ? verifierTable(configPath, toml) : undefined;
  const network = phaseNetworks(configPath, toml, separate);
  const notes = acceptedNotes(root, toml);
  const verifierCollect = collectCommandsOf(configPath, toml, notes);

  const env = toml.environment;
  const resources: HarborTask['resources'] = {};
  if (env.cpus !== undefined) resources.cpus = env.cpus;
  const memoryMb = sizeMb(configPath, env, 'memory');
  if (memoryMb !== undefined) resources.memoryMb = memoryMb;
  const storageMb = sizeMb(configPath, env, 'storage');
  if (storageMb !== undefined) resources.storageMb = storageMb;
  if (env.gpus !== undefined) resources.gpus = env.gpus;
  Object.assign(resources, gpuTypesOf(env));

  // Missing host variables fail the load, before any sandbox starts (harbor's CLI checks up front
  // too); [solution.env] only matters to the oracle, which checks it when it runs.
  const envTables = { environment: env.env ?? {}, verifier: toml.verifier.env ?? {}, solution: toml.solution.env ?? {} };
  const host = options.hostEnv ?? process.env;
  for (const field of ['environment', 'verifier'] as const) {
    const problem = checkVariables(configPath, `${field}.env`, envTables[field], host);
    if (problem) throw problem;
  }

  const testsDir = join(taskDir, 'tests');
  const solutionDir = join(taskDir, 'solution');
  const hasSolution = (await kindOf(join(solutionDir, 'solve.sh'))) === 'file';
  const instructionPath = join(taskDir, 'instruction.md');
  const hasInstruction = (await kindOf(instructionPath)) === 'file';
  // A multi-step task's steps may each bring their own test.sh (stepsOf checks each).
  const problems = await scriptProblems({ ...(multiStep ? {} : { testsDir }), ...(hasSolution ? { solutionDir } : {}) });
  const healthcheck = healthcheckOf(env);
  // Its services beside the sandbox, read before any I/O on a backend (compose.ts).
  const composed = compose
    ? readCompose(
        compose,
        await readFile(compose, 'utf8'),
        { contextDir: join(taskDir, 'environment'), mainImageName: `hb__${id}`, ...optional('cpus', env.cpus), ...optional('memoryMb', memoryMb) },
        host,
        resolveEnv(configPath, 'environment.env', envTables.environment, host),
      )
    : undefined;
  if (composed && Object.keys(composed.mainEnv).length) envTables.environment = { ...composed.mainEnv, ...envTables.environment };
  const found = await imageOf(configPath, taskDir, toml, notes);
  // harbor uploads no loose environment/ files for a compose task (definition.py): they reach main only by the build.
  const { environmentDir: _loose, ...imageOnly } = found;
  const image = compose ? imageOnly : found;
  let verifierEnvironment: HarborVerifierEnvironment | undefined;
  if (separate) {
    const hasTable = toml.verifier.environment !== undefined;
    if ((await kindOf(join(testsDir, 'docker-compose.yaml'))) === 'file') {
      throw fieldError(
        configPath,
        'tests/docker-compose.yaml',
        'is a multi-container verifier environment, which berth does not run: it runs one sandbox per phase',
      );
    }
    const testsDockerfile = (await kindOf(join(testsDir, 'Dockerfile'))) === 'file' ? testsDir : undefined;
    const at = hasTable ? 'verifier.environment' : 'environment';
    const sizes = {
      ...optional('memoryMb', sizeMb(configPath, separate, 'memory', at)),
      ...optional('storageMb', sizeMb(configPath, separate, 'storage', at)),
    };
    verifierEnvironment = verifierEnvironmentOf(separate, hasTable, testsDockerfile, image.image, sizes);
    const problem = checkVariables(configPath, `${at}.env`, verifierEnvironment.env, host);
    if (problem) throw problem;
  }
  const users = {
    ...(toml.agent.user !== undefined ? { agent: String(toml.agent.user) } : {}),
    ...(toml.verifier.user !== undefined ? { verifier: String(toml.verifier.user) } : {}),
  };
  const agentTimeoutSec = toml.agent.timeout_sec;
  const defaults = { users, network, testsDir, ...(hasSolution ? { solutionDir } : {}), ...(agentTimeoutSec !== undefined ? { agentTimeoutSec } : {}) };
  const steps = await stepsOf(configPath, taskDir, toml, defaults, notes, host, problems);

  return {
    id,
    dir: taskDir,
    configPath,
    contentHash: await taskContentHash(taskDir),
    ...(toml.task?.name ? { name: toml.task.name } : {}),
    ...image,
    buildTimeoutSec: env.build_timeout_sec ?? DEFAULT_BUILD_TIMEOUT_SEC,
    resources,
    network,
    env: envTables,
    users,
    ...(env.workdir !== undefined ? { workdir: env.workdir } : {}),
    ...(toml.agent.timeout_sec !== undefined ? { agentTimeoutSec: toml.agent.timeout_sec } : {}),
    verifierTimeoutSec: toml.verifier.timeout_sec ?? DEFAULT_VERIFIER_TIMEOUT_SEC,
    ...(healthcheck ? { healthcheck } : {}),
    ...(composed && Object.keys(composed.services).length ? { services: composed.services } : {}),
    ...(composed && Object.keys(composed.mainDependsOn).length ? { dependsOn: composed.mainDependsOn } : {}),
    ...(composed?.mainMounts.length ? { volumes: composed.mainMounts } : {}),
    ...(verifierEnvironment ? { verifierEnvironment } : {}),
    artifacts: artifactsOf(configPath, toml, notes),
    ...(verifierCollect.length > 0 ? { verifierCollect } : {}),
    agentConfig: { mcpServers: env.mcp_servers ?? [], ...(env.skills_dir !== undefined ? { skillsDir: env.skills_dir } : {}) },
    notes,
    ...(problems.length > 0 ? { problems } : {}),
    testsDir,
    ...(hasSolution ? { solutionDir } : {}),
    ...(hasInstruction ? { instructionPath } : {}),
    ...(steps ? { steps, multiStepRewardStrategy: toml.multi_step_reward_strategy ?? 'mean' } : {}),
  };
}

/**
 * Every task of a dataset directory: each non-hidden subdirectory is a task (a subdirectory that is
 * not a valid task is an error, never silently skipped: a dropped task would shrink the run's
 * denominator). A directory that itself holds task.toml is a dataset of one. Sorted by id.
 */
export async function loadHarborTasks(datasetDir: string, options: LoadOptions = {}): Promise<HarborTask[]> {
  const root = resolve(datasetDir);
  if ((await kindOf(root)) !== 'dir') throw configError('tasksDir', `dataset directory ${root} does not exist or is not a directory`);
  if ((await kindOf(join(root, 'task.toml'))) === 'file') return [await loadHarborTask(root, options)];

  const entries = await readdir(root, { withFileTypes: true });
  const all = entries
    .filter((e) => e.isDirectory() && !e.name.startsWith('.'))
    .map((e) => e.name)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  if (all.length === 0) throw configError('tasksDir', `dataset directory ${root} holds no task directories`);
  const dirs = options.filter ? all.filter(options.filter) : all;
  if (dirs.length === 0) return [];

  const tasks: HarborTask[] = [];
  const errors: unknown[] = [];
  for (const name of dirs) {
    try {
      tasks.push(await loadHarborTask(join(root, name), options));
    } catch (error) {
      errors.push(error);
    }
  }
  if (errors.length === 1) throw errors[0];
  if (errors.length > 1) {
    // Say everything that is wrong at once: fixing a 500-task dataset one error per run is slow.
    const lines = errors.slice(0, 20).map((e) => `  - ${e instanceof Error ? e.message : String(e)}`);
    if (errors.length > 20) lines.push(`  - ... and ${errors.length - 20} more`);
    throw configError('tasksDir', `${errors.length} of ${dirs.length} tasks in ${root} are invalid:\n${lines.join('\n')}`, errors[0]);
  }
  return tasks;
}
