import { readFile, readdir, stat } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { ConfigError } from '@berth/core';
import { parse as parseToml } from 'smol-toml';
import { parseSizeToMb } from './size.js';
import { DEFAULT_AGENT_TIMEOUT_SEC, DEFAULT_VERIFIER_TIMEOUT_SEC, type HarborTask } from './task.js';
import { fieldError, parseTaskToml, type TaskToml } from './task-toml.js';

async function kindOf(path: string): Promise<'file' | 'dir' | undefined> {
  try {
    const st = await stat(path);
    return st.isDirectory() ? 'dir' : st.isFile() ? 'file' : undefined;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ENOTDIR') return undefined;
    throw error;
  }
}

function configError(path: string, message: string, cause?: unknown): ConfigError {
  return new ConfigError({ operation: 'config', path, message, ...(cause === undefined ? {} : { cause }) });
}

/**
 * A size given either as `<key>_mb` (a whole number of MiB) or, the older compose way, as
 * `<key> = "2G"`. Both at once must agree, so that a task never runs with a limit it did not mean.
 */
function sizeMb(file: string, env: TaskToml['environment'], key: 'memory' | 'storage'): number | undefined {
  const mb = env[`${key}_mb`];
  const text = env[key];
  if (text === undefined) return mb;
  const parsed = typeof text === 'string' ? parseSizeToMb(text) : undefined;
  if (parsed === undefined) {
    throw fieldError(
      file,
      `environment.${key}`,
      `must be a size with a unit such as "2G" or "512M", got ${typeof text === 'string' ? JSON.stringify(text) : String(text)}` +
        ` (for a plain number of megabytes use ${key}_mb)`,
    );
  }
  if (mb !== undefined && mb !== parsed) {
    throw fieldError(file, `environment.${key}`, `(${parsed} MiB) disagrees with environment.${key}_mb (${mb}); give one of them`);
  }
  return parsed;
}

/**
 * Read one task directory in the harbor layout. The task id is the directory's name. Throws
 * ConfigError (permanent: retrying cannot fix a task definition) naming the file and field.
 */
export async function loadHarborTask(dir: string): Promise<HarborTask> {
  const taskDir = resolve(dir);
  const id = basename(taskDir);
  if ((await kindOf(taskDir)) !== 'dir') throw configError('task', `task directory ${taskDir} does not exist or is not a directory`);

  const configPath = join(taskDir, 'task.toml');
  let text: string;
  try {
    text = await readFile(configPath, 'utf8');
  } catch (error) {
    throw configError('task.toml', `task ${id} has no readable task.toml (${configPath}): ${(error as Error).message}`, error);
  }
  let root: Record<string, unknown>;
  try {
    root = parseToml(text) as Record<string, unknown>;
  } catch (error) {
    // smol-toml's TomlError knows where; its message adds a code frame under the first line.
    const { line, column } = error as { line?: unknown; column?: unknown };
    const where = typeof line === 'number' ? ` at line ${line}${typeof column === 'number' ? `, column ${column}` : ''}` : '';
    throw configError('task.toml', `${configPath} is not valid TOML${where}: ${(error as Error).message}`, error);
  }
  const toml = parseTaskToml(configPath, root);
  const env = toml.environment;
  const image = env.docker_image;
  const resources: HarborTask['resources'] = {};
  if (env.cpus !== undefined) resources.cpus = env.cpus;
  const memoryMb = sizeMb(configPath, env, 'memory');
  if (memoryMb !== undefined) resources.memoryMb = memoryMb;
  const storageMb = sizeMb(configPath, env, 'storage');
  if (storageMb !== undefined) resources.storageMb = storageMb;
  if (env.gpus !== undefined) resources.gpus = env.gpus;

  const testsDir = join(taskDir, 'tests');
  if ((await kindOf(join(testsDir, 'test.sh'))) !== 'file') {
    throw configError('tests/test.sh', `task ${id} (${taskDir}) has no tests/test.sh: without a verifier it cannot be scored`);
  }
  const solutionDir = join(taskDir, 'solution');
  const hasSolution = (await kindOf(join(solutionDir, 'solve.sh'))) === 'file';
  const instructionPath = join(taskDir, 'instruction.md');
  const hasInstruction = (await kindOf(instructionPath)) === 'file';

  return {
    id,
    dir: taskDir,
    configPath,
    image,
    resources,
    allowInternet: env.allow_internet ?? false,
    agentTimeoutSec: toml.agent.timeout_sec ?? DEFAULT_AGENT_TIMEOUT_SEC,
    verifierTimeoutSec: toml.verifier.timeout_sec ?? DEFAULT_VERIFIER_TIMEOUT_SEC,
    testsDir,
    ...(hasSolution ? { solutionDir } : {}),
    ...(hasInstruction ? { instructionPath } : {}),
  };
}

/**
 * Every task of a dataset directory: each non-hidden subdirectory is a task (a subdirectory that is
 * not a valid task is an error, never silently skipped: a dropped task would shrink the run's
 * denominator). A directory that itself holds task.toml is a dataset of one. Sorted by id.
 */
export async function loadHarborTasks(datasetDir: string): Promise<HarborTask[]> {
  const root = resolve(datasetDir);
  if ((await kindOf(root)) !== 'dir') throw configError('tasksDir', `dataset directory ${root} does not exist or is not a directory`);
  if ((await kindOf(join(root, 'task.toml'))) === 'file') return [await loadHarborTask(root)];

  const entries = await readdir(root, { withFileTypes: true });
  const dirs = entries
    .filter((e) => e.isDirectory() && !e.name.startsWith('.'))
    .map((e) => e.name)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  if (dirs.length === 0) throw configError('tasksDir', `dataset directory ${root} holds no task directories`);

  const tasks: HarborTask[] = [];
  const errors: unknown[] = [];
  for (const name of dirs) {
    try {
      tasks.push(await loadHarborTask(join(root, name)));
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
