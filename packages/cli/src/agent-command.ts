import { readFile } from 'node:fs/promises';
import type { AgentFunction, HarborAgent } from '@berth/harbor';

/**
 * `--agent`: 'oracle' (the task's solution), 'none', or a shell command run in the sandbox as the
 * task's agent: in its workdir, as its agent user, with the task's instruction on stdin and its
 * path in BERTH_INSTRUCTION (/logs/agent/instruction.md). The task's agent timeout applies. How
 * the command exits is its own business: the verifier decides the reward.
 */
export function agentFromOption(value: string): HarborAgent {
  if (value === 'oracle' || value === 'none') return value;
  const command = value;
  const agent: AgentFunction = async (env, task, ctx) => {
    const instruction = task.instructionPath ? await readFile(task.instructionPath, 'utf8') : '';
    await env.exec(['sh', '-c', 'mkdir -p /logs/agent && cat > /logs/agent/instruction.md'], { stdin: instruction, user: '0', signal: ctx.signal });
    await env.exec(['sh', '-c', command], {
      stdin: instruction,
      env: { BERTH_INSTRUCTION: '/logs/agent/instruction.md', BERTH_TASK_ID: task.id },
      ...(task.workdir ? { cwd: task.workdir } : {}),
      ...(task.users.agent !== undefined ? { user: task.users.agent } : {}),
      signal: ctx.signal,
    });
  };
  Object.defineProperty(agent, 'name', { value: 'command' });
  return agent;
}
