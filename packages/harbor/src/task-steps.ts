import { join } from 'node:path';
import { ConfigError } from '@berth/core';
import { checkVariables, type HostEnv } from './env-template.js';
import { kindOf } from './path-kind.js';
import { DEFAULT_VERIFIER_TIMEOUT_SEC, type HarborStep, type HarborTask, type HarborTaskProblem } from './task.js';
import { scriptProblems } from './task-preflight.js';
import { artifactsOf, healthcheckOf, phaseNetwork, refuseArtifactServices } from './task-semantics.js';
import { fieldError, likelyMeant, unknownFields, type StepToml, type TaskToml } from './task-toml.js';
import { collectCommandsOf } from './verifier-collect.js';

// harbor's `[[steps]]` (StepConfig in models/task/config.py, the layout in models/task/paths.py and
// Task._validate_tests in models/task/task.py, at harbor 39b85872, v0.22.0): each step has a
// directory steps/<name>/ with instruction.md (required), tests/ (merged over the task's tests/),
// solution/, and workdir/ (uploaded into the workdir; its setup.sh runs before the agent).

/** What a step's settings fall back on: the task's own, as loaded. */
type TaskDefaults = Pick<HarborTask, 'users' | 'network' | 'agentTimeoutSec' | 'solutionDir' | 'testsDir'>;

function layoutError(path: string, message: string): ConfigError {
  return new ConfigError({ operation: 'config', path, message });
}

/** A step's name names its directory and its results' (steps/<name>/): one plain path component. */
function checkName(file: string, names: Set<string>, name: string, i: number): void {
  if (name === '.' || name === '..' || /[/\\\0]/.test(name)) {
    throw fieldError(file, `steps[${i}].name`, `must name one directory under steps/ (no "/", "\\\\", "." or ".."), got ${JSON.stringify(name)}`);
  }
  if (names.has(name)) {
    throw fieldError(file, `steps[${i}].name`, `repeats the step name ${JSON.stringify(name)}: each step needs its own steps/<name>/ directory and results`);
  }
  names.add(name);
}

/**
 * Refused in a step, naming the field: a separate verifier (berth runs a multi-step task's verifiers
 * in the agent's sandbox), and what no berth sandbox runs anywhere (allowlists, compose services).
 */
function refuseStep(file: string, toml: TaskToml, step: StepToml, i: number): void {
  const at = `steps[${i}]`;
  refuseArtifactServices(file, step.artifacts ?? [], `${at}.artifacts`);
  const v = step.verifier;
  if (v.environment_mode === 'shared' && v.environment !== undefined) {
    throw fieldError(file, `${at}.verifier.environment`, 'cannot go with environment_mode = "shared" (harbor refuses it too)');
  }
  const separate =
    v.environment_mode === 'separate' ||
    (v.environment_mode === undefined && v.environment !== undefined) ||
    (v.environment_mode === undefined && (toml.verifier.environment_mode === 'separate' || toml.verifier.environment !== undefined));
  if (separate) {
    const field =
      v.environment_mode !== undefined
        ? `${at}.verifier.environment_mode`
        : v.environment !== undefined
          ? `${at}.verifier.environment`
          : 'verifier.environment_mode';
    throw fieldError(
      file,
      field,
      `makes step "${step.name}" verify in a separate sandbox, which berth does not do for multi-step tasks yet: it verifies each step in the agent's sandbox. Set ${at}.verifier.environment_mode = "shared", or run this task with harbor`,
    );
  }
}

/** The step's directory, as harbor requires it: steps/<name>/instruction.md, and a test.sh of its own or the task's. */
async function stepFiles(taskDir: string, step: StepToml, defaults: TaskDefaults) {
  const dir = join(taskDir, 'steps', step.name);
  const rel = `steps/${step.name}`;
  if ((await kindOf(dir)) !== 'dir') throw layoutError(rel, `task ${taskDir} has no ${rel}/ directory for its step "${step.name}" (harbor requires one)`);
  const instructionPath = join(dir, 'instruction.md');
  if ((await kindOf(instructionPath)) !== 'file')
    throw layoutError(
      `${rel}/instruction.md`,
      `task ${taskDir}: step "${step.name}" has no ${rel}/instruction.md, the step's instruction (harbor requires one)`,
    );
  const testsDir = join(dir, 'tests');
  const hasOwnTests = (await kindOf(testsDir)) === 'dir';
  const ownTest = (await kindOf(join(testsDir, 'test.sh'))) === 'file';
  const problems: HarborTaskProblem[] = [];
  if (!ownTest && (await kindOf(join(defaults.testsDir, 'test.sh'))) !== 'file') {
    problems.push({
      path: `${rel}/tests/test.sh`,
      message: `step "${step.name}" has neither ${rel}/tests/test.sh nor tests/test.sh, so it cannot be verified: add one that writes /logs/verifier/reward.txt`,
    });
  } else problems.push(...(await scriptProblems({ testsDir: ownTest ? testsDir : defaults.testsDir }, ownTest ? `${rel}/` : '')));
  const testsDirs = [...((await kindOf(defaults.testsDir)) === 'dir' ? [defaults.testsDir] : []), ...(hasOwnTests ? [testsDir] : [])];
  // harbor's oracle: the step's solution/ when there is one (it must hold solve.sh), else the task's.
  const ownSolution = join(dir, 'solution');
  const solutionDir =
    (await kindOf(ownSolution)) === 'dir' ? ((await kindOf(join(ownSolution, 'solve.sh'))) === 'file' ? ownSolution : undefined) : defaults.solutionDir;
  const workdirDir = join(dir, 'workdir');
  const hasWorkdir = (await kindOf(workdirDir)) === 'dir';
  const hasSetup = hasWorkdir && (await kindOf(join(workdirDir, 'setup.sh'))) === 'file';
  if (solutionDir && solutionDir !== defaults.solutionDir) problems.push(...(await scriptProblems({ solutionDir }, `${rel}/`)));
  return { problems, dir, instructionPath, testsDirs, ...(solutionDir ? { solutionDir } : {}), ...(hasWorkdir ? { workdirDir } : {}), hasSetup };
}

/**
 * The `[[steps]]` of a parsed task.toml, validated and resolved against the task's settings; undefined
 * for a single-step task (no steps, or an empty list, as harbor's `has_steps`). Unknown keys are noted.
 */
export async function stepsOf(
  file: string,
  taskDir: string,
  toml: TaskToml,
  defaults: TaskDefaults,
  notes: string[],
  host: HostEnv,
  problems: HarborTaskProblem[],
): Promise<HarborStep[] | undefined> {
  if (!toml.steps?.length) return undefined;
  const names = new Set<string>();
  const steps: HarborStep[] = [];
  for (const [i, step] of toml.steps.entries()) {
    const at = `steps[${i}]`;
    checkName(file, names, step.name, i);
    refuseStep(file, toml, step, i);
    for (const path of unknownFields(step as Record<string, unknown>, 'steps')) {
      const meant = likelyMeant(path);
      const field = path.replace(/^steps/, at);
      notes.push(`${field} is not a harbor task.toml field: ignored (harbor ignores it too)${meant ? `; did you mean ${meant.replace(/^steps/, at)}?` : ''}`);
    }
    const verifierEnv = step.verifier.env ?? {};
    const problem = checkVariables(file, `${at}.verifier.env`, verifierEnv, host);
    if (problem) throw problem;
    const agentTimeoutSec = step.agent.timeout_sec ?? defaults.agentTimeoutSec;
    const users = {
      ...(step.agent.user !== undefined ? { agent: String(step.agent.user) } : defaults.users.agent !== undefined ? { agent: defaults.users.agent } : {}),
      ...(step.verifier.user !== undefined
        ? { verifier: String(step.verifier.user) }
        : defaults.users.verifier !== undefined
          ? { verifier: defaults.users.verifier }
          : {}),
    };
    const healthcheck = healthcheckOf(step);
    const { problems: found, ...files } = await stepFiles(taskDir, step, defaults);
    // The same problem twice (two steps sharing the task's tests/test.sh) is said once.
    for (const p of found) if (!problems.some((q) => q.path === p.path)) problems.push(p);
    steps.push({
      name: step.name,
      ...files,
      ...(agentTimeoutSec !== undefined ? { agentTimeoutSec } : {}),
      verifierTimeoutSec: step.verifier.timeout_sec ?? DEFAULT_VERIFIER_TIMEOUT_SEC,
      users,
      network: {
        agent: phaseNetwork(file, `${at}.agent`, step.agent, defaults.network.agent),
        verifier: phaseNetwork(file, `${at}.verifier`, step.verifier, defaults.network.verifier),
      },
      verifierEnv,
      ...(healthcheck ? { healthcheck } : {}),
      ...(step.min_reward !== undefined ? { minReward: step.min_reward } : {}),
      artifacts: artifactsOf(file, toml, notes, step.artifacts ?? [], `${at}.artifacts`),
      verifierCollect: collectCommandsOf(file, toml, notes, step.verifier.collect ?? [], `${at}.verifier.collect`),
    });
  }
  return steps;
}
