import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { PreflightCheck } from '@berth/core';
import { checkAgentCanRun, type HarborAgent } from './agent.js';
import type { HostEnv } from './env-template.js';
import type { HarborTask } from './task.js';

/** A script with Windows line endings: its `#!/bin/sh\r` names no interpreter, so it exits 127. */
export async function hasCrlf(path: string): Promise<boolean> {
  const text = await readFile(path).catch(() => undefined);
  return text?.includes('\r\n') === true;
}

function crlfMessage(script: string): string {
  return `${script} has Windows line endings (CRLF): its #! line names an interpreter with a \\r at the end, so it fails with exit 127 ("not found"); convert it with dos2unix or sed -i 's/\\r$//'`;
}

/** The task's scripts with CRLF line endings, as task-relative paths (solve.sh only when the task has one). */
async function crlfScripts(task: Pick<HarborTask, 'testsDir' | 'solutionDir'>): Promise<string[]> {
  const found: string[] = [];
  if (await hasCrlf(join(task.testsDir, 'test.sh'))) found.push('tests/test.sh');
  if (task.solutionDir && (await hasCrlf(join(task.solutionDir, 'solve.sh')))) found.push('solution/solve.sh');
  return found;
}

/** Notes for scripts that cannot run as written (said at load, so `berth run` prints them). */
export async function scriptNotes(task: Pick<HarborTask, 'testsDir' | 'solutionDir'>): Promise<string[]> {
  return (await crlfScripts(task)).map(crlfMessage);
}

/**
 * What would fail every attempt of this task whatever the backend does, checked on the host
 * before a run: the oracle without solution/solve.sh (or with [solution.env] variables unset), a
 * verifier or solution that cannot run as written. One check per problem; empty when none.
 */
export async function checkTask(task: HarborTask, agent: HarborAgent, hostEnv: HostEnv = process.env): Promise<PreflightCheck[]> {
  const checks: PreflightCheck[] = [];
  try {
    checkAgentCanRun(agent, task, hostEnv);
  } catch (error) {
    checks.push({ name: 'agent', status: 'fail', message: (error as Error).message });
  }
  // Only the oracle runs solve.sh.
  for (const script of await crlfScripts(task)) {
    if (script === 'tests/test.sh' || agent === 'oracle') checks.push({ name: script, status: 'fail', message: crlfMessage(script) });
  }
  return checks;
}
