import { createHash } from 'node:crypto';
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

/**
 * What a resumed job compares to tell agents apart: a command is known by a hash of its text
 * (it may carry a key; the journal and the refusal must not).
 */
export function agentIdOf(value: string): string {
  if (value === 'oracle' || value === 'none') return value;
  return `command sha256:${createHash('sha256').update(value).digest('hex').slice(0, 12)}`;
}
