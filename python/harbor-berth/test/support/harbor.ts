// Runs the real harbor (the newest locked version from PyPI, in the venv test/setup/harbor.sh makes) with berth's
// plugin, and reads harbor's own result files.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const REPO = fileURLToPath(new URL('../../../../', import.meta.url));
export const EXAMPLES = join(REPO, 'examples/tasks');
export const FIXTURES = fileURLToPath(new URL('../tasks/', import.meta.url));
/** The newest locked harbor's venv (test/setup/harbor.sh). */
export const HARBOR_VENV = process.env.BERTH_HARBOR_VENV ?? '/var/lib/berth-test/harbor-venv';
export const BERTH = `${process.execPath} ${join(REPO, 'packages/cli/bin/berth.js')}`;

/** Docker containers harbor's trials made (the plugin labels each one berth.harbor), by id. */
export async function harborContainers(): Promise<string[]> {
  const { stdout } = await promisify(execFile)('docker', ['ps', '-a', '--filter', 'label=berth.harbor', '--format', '{{.ID}}']);
  return stdout.split('\n').filter(Boolean);
}

/** The first of harbor's containers whose oracle has started (the slow task's marker), within 60 s. */
export async function solving(): Promise<string> {
  const run = promisify(execFile);
  for (let i = 0; i < 300; i++) {
    for (const id of await harborContainers()) {
      const marker = await run('docker', ['exec', id, 'cat', '/tmp/solving']).catch(() => undefined);
      if (marker?.stdout.trim() === 'started') return id;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('no harbor sandbox started the slow task within 60 s');
}

export interface HarborRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
}

/** `harbor run -e berth_harbor:BerthEnvironment -a oracle` on `path` with these --ek pairs; `onStart` sees the child. */
export function harborRun(
  path: string,
  jobsDir: string,
  jobName: string,
  ek: Record<string, string | number | boolean>,
  opts: {
    args?: string[];
    /** Added to this process's environment (a value undefined removes the variable). */
    env?: Record<string, string | undefined>;
    /** The harbor executable: default the newest locked version's venv (test/setup/harbor.sh). */
    harbor?: string;
    onStart?: (child: ChildProcess) => void;
    timeoutMs?: number;
  } = {},
): Promise<HarborRun> {
  const args = ['run', '-p', path, '-e', 'berth_harbor:BerthEnvironment', '-a', 'oracle', '-o', jobsDir, '--job-name', jobName, '-y', '-n', '4'];
  for (const [key, value] of Object.entries(ek)) args.push('--ek', `${key}=${value}`);
  args.push(...(opts.args ?? []));
  const child = spawn(opts.harbor ?? join(HARBOR_VENV, 'bin/harbor'), args, {
    env: {
      ...process.env,
      BERTH_COMMAND: BERTH,
      // LiteLLM (a harbor dependency) fetches a price list from the internet unless told not to.
      LITELLM_LOCAL_MODEL_COST_MAP: 'True',
      ...opts.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  opts.onStart?.(child);
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 300_000);
  return new Promise((resolve) => {
    child.on('error', (error) => {
      clearTimeout(timer);
      resolve({ code: null, signal: null, output: `${output}\n${String(error)}` });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, output });
    });
  });
}

export interface TrialResult {
  task_name: string;
  verifier_result: { rewards?: Record<string, number> } | null;
  exception_info: { exception_type: string; exception_message: string } | null;
}

/** Each trial's result.json of a job, by task name. */
export function trials(jobDir: string): Map<string, TrialResult> {
  const out = new Map<string, TrialResult>();
  for (const entry of readdirSync(jobDir, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const result = JSON.parse(readFileSync(join(jobDir, entry.name, 'result.json'), 'utf8')) as TrialResult;
    out.set(result.task_name, result);
  }
  return out;
}

/** task -> reward, or the exception's type when the trial has none. */
export function outcomes(jobDir: string): Record<string, number | string> {
  return Object.fromEntries(
    [...trials(jobDir)].map(([name, t]) => [name, t.verifier_result?.rewards?.reward ?? t.exception_info?.exception_type ?? 'no result']),
  );
}

export function jobResult(jobDir: string): { stats: { n_retries?: number; n_errored_trials?: number }; finished_at: string | null } {
  return JSON.parse(readFileSync(join(jobDir, 'result.json'), 'utf8'));
}

/**
 * A one-off harbor task under `dir/name` (a prebuilt `image`, no network unless `network` says, the oracle's solve.sh a
 * no-op), with `test` as tests/test.sh and, when given, an environment/Dockerfile. Its dataset is `dir`.
 */
export async function writeTask(
  dir: string,
  name: string,
  task: { image: string; test: string; dockerfile?: string /** task.toml's [environment] network lines; default no-network */; network?: string },
): Promise<void> {
  const root = join(dir, name);
  await mkdir(join(root, 'tests'), { recursive: true });
  await mkdir(join(root, 'solution'), { recursive: true });
  await writeFile(join(root, 'instruction.md'), 'Nothing to do.\n');
  await writeFile(
    join(root, 'task.toml'),
    `version = "1.0"\n\n[verifier]\ntimeout_sec = 60.0\n\n[agent]\ntimeout_sec = 60.0\n\n[environment]\ndocker_image = "${task.image}"\n${task.network ?? 'network_mode = "no-network"'}\n`,
  );
  await writeFile(join(root, 'solution', 'solve.sh'), '#!/bin/sh\ntrue\n');
  await writeFile(join(root, 'tests', 'test.sh'), task.test);
  if (task.dockerfile !== undefined) {
    await mkdir(join(root, 'environment'), { recursive: true });
    await writeFile(join(root, 'environment', 'Dockerfile'), task.dockerfile);
  }
}
