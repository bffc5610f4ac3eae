import { readFile } from 'node:fs/promises';
import type { Environment, TrialContext } from '@berth/core';
import type { StepTimer } from './steps.js';
import type { HarborTask } from './task.js';

/**
 * A shell command as the agent (the CLI's `--agent '<cmd>'`): run with `sh -c` in the sandbox, in
 * the task's workdir, as `[agent] user`, with the task's agent timeout; the instruction on stdin
 * and at /logs/agent/instruction.md (its path in BERTH_INSTRUCTION, the task id in BERTH_TASK_ID).
 * Its stdout, stderr and exit code are kept in the attempt's agent/ directory and result.json. The
 * verifier decides the reward however it ends; running out of time or exiting non-zero is recorded
 * as harbor records an installed agent's (exceptionInfo AgentTimeoutError / NonZeroAgentExitCodeError).
 */
export interface CommandAgent {
  command: string;
}

export const INSTRUCTION_PATH = '/logs/agent/instruction.md';

export async function startCommand(env: Environment, task: HarborTask, ctx: TrialContext, timer: StepTimer): Promise<string> {
  const instruction = task.instructionPath ? await readFile(task.instructionPath, 'utf8') : '';
  await timer.run('write instruction', () =>
    env.exec(['sh', '-c', `mkdir -p /logs/agent && cat > ${INSTRUCTION_PATH}`], { stdin: instruction, user: '0', signal: ctx.signal }),
  );
  return instruction;
}
