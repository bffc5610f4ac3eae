import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError, type Environment, type ExecResult, type TrialContext } from '@berth/core';
import { envContext, harborFailure } from './reward.js';
import type { StepTimer, StepTiming } from './steps.js';
import type { HarborTask } from './task.js';

/**
 * Who works on the task before the verifier runs:
 * - 'oracle': uploads solution/ to /solution and runs `sh /solution/solve.sh` (a perfect agent:
 *   an oracle run checks that the tasks and the infrastructure work, before any model is blamed);
 * - 'none': nothing (the verifier sees the untouched environment; a task should score 0);
 * - a function: your agent, given the started environment. It must honour `ctx.signal`, which
 *   also fires at the task's agent timeout.
 */
export type HarborAgent = 'oracle' | 'none' | AgentFunction;
export type AgentFunction = (env: Environment, task: HarborTask, ctx: TrialContext) => Promise<void>;

export function agentName(agent: HarborAgent): string {
  return typeof agent === 'function' ? agent.name || 'custom' : agent;
}

export function execTiming(result: ExecResult): Partial<StepTiming> {
  return { exitCode: result.exitCode, timedOut: result.timedOut };
}

/** Keep a command's output beside result.json, byte for byte. */
export async function saveOutput(dir: string, prefix: string, result: ExecResult): Promise<void> {
  await mkdir(dir, { recursive: true });
  await Promise.all([
    writeFile(join(dir, `${prefix}stdout.txt`), result.stdoutBytes),
    writeFile(join(dir, `${prefix}stderr.txt`), result.stderrBytes),
  ]);
}

interface AgentRun {
  env: Environment;
  task: HarborTask;
  ctx: TrialContext;
  timer: StepTimer;
  /** Where the agent's output is kept: <attemptDir>/agent. */
  outDir: string;
}

/** A ConfigError before any sandbox starts: an oracle run of a task without a solution cannot mean anything. */
export function checkAgentCanRun(agent: HarborAgent, task: HarborTask): void {
  if (agent === 'oracle' && task.solutionDir === undefined) {
    throw new ConfigError({
      operation: 'config',
      path: 'solution/solve.sh',
      message: `task ${task.id} (${task.dir}) has no solution/solve.sh, which the oracle agent runs; use agent 'none' or add one`,
    });
  }
}

async function runOracle({ env, task, ctx, timer, outDir }: AgentRun): Promise<void> {
  await timer.run('upload solution', () => env.uploadDir(task.solutionDir!, '/solution', { signal: ctx.signal }));
  const result = await timer.run(
    'agent',
    () => env.exec(['sh', '/solution/solve.sh'], { timeoutMs: task.agentTimeoutSec * 1000, signal: ctx.signal }),
    execTiming,
  );
  await saveOutput(outDir, '', result);
  if (result.timedOut) {
    throw harborFailure('AgentTimeout', `the oracle (solution/solve.sh) did not finish within ${task.agentTimeoutSec} s`, envContext(env));
  }
  // A non-zero exit is not a failure by itself: the verifier decides what the agent achieved.
}

async function runFunction(agent: AgentFunction, { env, task, ctx, timer }: AgentRun): Promise<void> {
  const timeoutMs = task.agentTimeoutSec * 1000;
  const deadline = new AbortController();
  const signal = AbortSignal.any([ctx.signal, deadline.signal]);
  let timer_: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer_ = setTimeout(() => resolve('timeout'), timeoutMs);
  });
  await timer.run('agent', async () => {
    const running = agent(env, task, { ...ctx, signal });
    try {
      const first = await Promise.race([running, timedOut]);
      if (first === 'timeout') {
        // Stop it (an agent that honours its signal stops now; one that does not is cut off by
        // the teardown that follows) and do not wait for it.
        deadline.abort(new Error(`agent timeout (${task.agentTimeoutSec} s)`));
        running.catch(() => undefined);
        throw harborFailure('AgentTimeout', `the agent did not finish within ${task.agentTimeoutSec} s`, envContext(env));
      }
    } finally {
      clearTimeout(timer_);
    }
  });
}

/** Run the agent in the started environment; AgentTimeout (a TaskFailure) when it runs out of time. */
export async function runAgent(agent: HarborAgent, run: AgentRun): Promise<void> {
  if (agent === 'none') return;
  if (agent === 'oracle') return runOracle(run);
  return runFunction(agent, run);
}
