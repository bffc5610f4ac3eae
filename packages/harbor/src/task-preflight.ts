import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { TaskDefinitionError, type PreflightCheck } from '@berth/core';
import { checkAgentCanRun, type HarborAgent } from './agent.js';
import type { HostEnv } from './env-template.js';
import type { HarborTask, HarborTaskProblem } from './task.js';

/** A script with Windows line endings: its `#!/bin/sh\r` names no interpreter, so it exits 127. */
export async function hasCrlf(path: string): Promise<boolean> {
  const text = await readFile(path).catch(() => undefined);
  return text?.includes('\r\n') === true;
}

function crlfMessage(script: string): string {
  return `${script} has Windows line endings (CRLF): its #! line names an interpreter with a \\r at the end, so it fails with exit 127 ("not found"); convert it with dos2unix or sed -i 's/\\r$//'`;
}

/**
 * The mistakes in a task's scripts that load can see (set on `HarborTask.problems`): no
 * tests/test.sh (a single-step task), a test.sh or solve.sh with CRLF line endings. `testsDir`
 * undefined: a multi-step task, whose steps are checked on their own.
 */
export async function scriptProblems(dirs: { testsDir?: string; solutionDir?: string }, prefix = ''): Promise<HarborTaskProblem[]> {
  const problems: HarborTaskProblem[] = [];
  if (dirs.testsDir !== undefined) {
    const testSh = join(dirs.testsDir, 'test.sh');
    const text = await readFile(testSh).catch(() => undefined);
    if (text === undefined) {
      problems.push({
        path: `${prefix}tests/test.sh`,
        message: `there is no ${prefix}tests/test.sh, the verifier: without it the task cannot be scored; add one that writes /logs/verifier/reward.txt`,
      });
    } else if (text.includes('\r\n')) problems.push({ path: `${prefix}tests/test.sh`, message: crlfMessage(`${prefix}tests/test.sh`) });
  }
  if (dirs.solutionDir !== undefined && (await hasCrlf(join(dirs.solutionDir, 'solve.sh')))) {
    problems.push({ path: `${prefix}solution/solve.sh`, message: crlfMessage(`${prefix}solution/solve.sh`), oracleOnly: true });
  }
  return problems;
}

/** The oracle runs solve.sh: a task (or a step) without one cannot be run by it. */
function missingSolutions(task: HarborTask): HarborTaskProblem[] {
  if (task.steps === undefined) {
    return task.solutionDir === undefined
      ? [
          {
            path: 'solution/solve.sh',
            message: "there is no solution/solve.sh, which the oracle agent runs: add one, or run another agent (berth run --agent, or agent 'none')",
            oracleOnly: true,
          },
        ]
      : [];
  }
  // harbor's oracle runs each step's steps/<name>/solution/solve.sh, else the task's solution/solve.sh.
  return task.steps
    .filter((step) => step.solutionDir === undefined)
    .map((step) => ({
      path: `steps/${step.name}/solution/solve.sh`,
      message: `step "${step.name}" has no steps/${step.name}/solution/solve.sh${task.solutionDir === undefined ? ' and the task no solution/solve.sh' : ''}, which the oracle agent runs for it: add one, or run another agent`,
      oracleOnly: true as const,
    }));
}

/** What is wrong with the task's own files for this agent (empty when nothing berth can see). */
export function definitionProblems(task: HarborTask, agent: HarborAgent): HarborTaskProblem[] {
  const problems = [...(task.problems ?? []), ...missingSolutions(task)];
  return agent === 'oracle' ? problems : problems.filter((p) => !p.oracleOnly);
}

/** The TaskDefinitionError for a task's problems: every one, each with its file, in one message. */
export function taskDefinitionError(task: HarborTask, problems: readonly HarborTaskProblem[]): TaskDefinitionError {
  const said = problems.map((p) => p.message).join('; ');
  return new TaskDefinitionError({
    operation: 'trial',
    path: problems[0]!.path,
    message: `task ${task.id} (${task.dir}) is defined wrongly, so no attempt was run and nothing was scored: ${said}`,
  });
}

/**
 * What would fail every attempt of this task whatever the backend does, checked on the host
 * before a run: the task's own mistakes (as a trial would find them: a TaskDefinitionError each)
 * and [solution.env] variables the oracle needs that are unset. One check per problem; empty when none.
 */
export async function checkTask(task: HarborTask, agent: HarborAgent, hostEnv: HostEnv = process.env): Promise<PreflightCheck[]> {
  const checks: PreflightCheck[] = definitionProblems(task, agent).map((p) => ({ name: p.path, status: 'fail', message: p.message }));
  try {
    checkAgentCanRun(agent, task, hostEnv);
  } catch (error) {
    checks.push({ name: 'agent', status: 'fail', message: (error as Error).message });
  }
  return checks;
}
