import type { HarborAgent } from '@berth/harbor';

/**
 * `--agent`: 'oracle' (the task's solution), 'none', or a shell command run in the sandbox as the
 * task's agent (harbor's CommandAgent: instruction on stdin and in BERTH_INSTRUCTION, the task's
 * workdir, agent user and agent timeout; its stdout, stderr, exit code and /logs/agent kept in the
 * attempt's agent/ directory).
 */
export function agentFromOption(value: string): HarborAgent {
  if (value === 'oracle' || value === 'none') return value;
  return { command: value };
}
