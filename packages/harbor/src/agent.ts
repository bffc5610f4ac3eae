import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError, TransferError, linkSignals, type Environment, type ExecOptions, type ExecResult, type TrialContext } from '@berth/core';
import { INSTRUCTION_PATH, startCommand, type CommandAgent } from './command-agent.js';
import { checkVariables, resolveEnv, type HostEnv } from './env-template.js';
import { envContext, harborFailure } from './reward.js';
import type { StepTimer, StepTiming } from './steps.js';
import type { HarborTask } from './task.js';

/**
 * Who works on the task before the verifier runs:
 * - 'oracle': uploads solution/ to /solution and runs `sh /solution/solve.sh` (a perfect agent:
 *   an oracle run checks that the tasks and the infrastructure work, before any model is blamed);
 * - 'none': nothing (the verifier sees the untouched environment; a task should score 0);
 * - `{ command }`: a shell command run in the sandbox as the agent (see CommandAgent); its output
 *   and exit code are kept as the oracle's are;
 * - a function: your agent, given the started environment. It must honour `ctx.signal`, which
 *   also fires at the task's agent timeout (when the task has one). It runs on the agent phase's
 *   network; `task.users.agent`, `task.workdir` and `task.agentConfig` say how the task expects it
 *   to run.
 */
export type HarborAgent = 'oracle' | 'none' | CommandAgent | AgentFunction;
export type AgentFunction = (env: Environment, task: HarborTask, ctx: TrialContext) => Promise<void>;

export function agentName(agent: HarborAgent): string {
  if (typeof agent === 'function') return agent.name || 'custom';
  return typeof agent === 'object' ? 'command' : agent;
}

export function execTiming(result: ExecResult): Partial<StepTiming> {
  return { exitCode: result.exitCode, timedOut: result.timedOut };
}

/** Keep a command's output beside result.json, byte for byte. */
export async function saveOutput(dir: string, prefix: string, result: ExecResult): Promise<void> {
  await mkdir(dir, { recursive: true });
  await Promise.all([writeFile(join(dir, `${prefix}stdout.txt`), result.stdoutBytes), writeFile(join(dir, `${prefix}stderr.txt`), result.stderrBytes)]);
}

interface AgentRun {
  env: Environment;
  task: HarborTask;
  ctx: TrialContext;
  timer: StepTimer;
  /** Where the agent's output is kept: <attemptDir>/agent. */
  outDir: string;
  hostEnv: HostEnv;
}

/**
 * A ConfigError before any sandbox starts: an oracle run of a task without a solution cannot mean
 * anything, and one whose [solution.env] needs host variables that are not set would run wrong.
 */
export function checkAgentCanRun(agent: HarborAgent, task: HarborTask, hostEnv: HostEnv): void {
  if (agent !== 'oracle') return;
  if (task.solutionDir === undefined) {
    throw new ConfigError({
      operation: 'config',
      path: 'solution/solve.sh',
      message: `task ${task.id} (${task.dir}) has no solution/solve.sh, which the oracle agent runs; use agent 'none' or add one`,
    });
  }
  const problem = checkVariables(task.configPath, 'solution.env', task.env.solution, hostEnv);
  if (problem) throw problem;
}

/**
 * As harbor runs a script: made executable as root, then run directly, so its #! line decides
 * the interpreter. (Harbor does not check the chmod either: a script that cannot run says so in
 * its exit code.)
 */
export async function runScript(env: Environment, path: string, opts: ExecOptions): Promise<ExecResult> {
  await env.exec(['chmod', '+x', path], { user: '0', ...(opts.signal ? { signal: opts.signal } : {}) });
  return env.exec(['sh', '-c', path], opts);
}

function timeoutOf(task: HarborTask): { timeoutMs?: number } {
  return task.agentTimeoutSec === undefined ? {} : { timeoutMs: task.agentTimeoutSec * 1000 };
}

/** What a command-running agent leaves: its output (kept by runAgent) and what its timeout is called. */
interface Captured {
  result: ExecResult;
  timeout: string;
}

async function runOracle({ env, task, ctx, timer, hostEnv }: AgentRun): Promise<Captured> {
  await timer.run('upload solution', () => env.uploadDir(task.solutionDir!, '/solution', { signal: ctx.signal }));
  // harbor: [solution.env] over DEBIAN_FRONTEND=noninteractive, as the agent's user, with its timeout.
  const solutionEnv = resolveEnv(task.configPath, 'solution.env', task.env.solution, hostEnv);
  const result = await timer.run(
    'agent',
    () =>
      runScript(env, '/solution/solve.sh', {
        env: { DEBIAN_FRONTEND: 'noninteractive', ...solutionEnv },
        ...(task.users.agent !== undefined ? { user: task.users.agent } : {}),
        ...timeoutOf(task),
        signal: ctx.signal,
      }),
    execTiming,
  );
  // A non-zero exit is not a failure by itself: the verifier decides what the agent achieved.
  return { result, timeout: `the oracle (solution/solve.sh) did not finish within ${task.agentTimeoutSec} s` };
}

async function runCommand({ command }: CommandAgent, { env, task, ctx, timer }: AgentRun): Promise<Captured> {
  const instruction = await startCommand(env, task, ctx, timer);
  const result = await timer.run(
    'agent',
    () =>
      env.exec(['sh', '-c', command], {
        stdin: instruction,
        env: { BERTH_INSTRUCTION: INSTRUCTION_PATH, BERTH_TASK_ID: task.id },
        ...(task.workdir ? { cwd: task.workdir } : {}),
        ...(task.users.agent !== undefined ? { user: task.users.agent } : {}),
        ...timeoutOf(task),
        signal: ctx.signal,
      }),
    execTiming,
  );
  return { result, timeout: `the agent command did not finish within ${task.agentTimeoutSec} s` };
}

async function runFunction(agent: AgentFunction, { env, task, ctx, timer }: AgentRun): Promise<void> {
  if (task.agentTimeoutSec === undefined) {
    await timer.run('agent', () => agent(env, task, ctx));
    return;
  }
  const timeoutMs = task.agentTimeoutSec * 1000;
  // The attempt's signal or the agent's timeout; unlinked once the agent is done with it.
  const deadline = linkSignals(ctx.signal);
  let timer_: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer_ = setTimeout(() => resolve('timeout'), timeoutMs);
  });
  await timer.run('agent', async () => {
    try {
      const running = agent(env, task, { ...ctx, signal: deadline.signal });
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
      deadline.dispose();
    }
  });
}

/**
 * /logs/agent as the agent left it, into the attempt's agent/ directory (harbor mounts one onto the
 * other). Before berth's captured stdout.txt / stderr.txt are written, so those always win.
 */
async function keepAgentLogs(env: Environment, outDir: string, signal: AbortSignal): Promise<void> {
  try {
    await env.downloadDir('/logs/agent', outDir, { signal });
  } catch (error) {
    if (!(TransferError.isInstance(error) && error.reason === 'not_found')) throw error;
  }
}

/**
 * Run the agent in the started environment, then keep /logs/agent (also when the agent failed or
 * timed out: then most of all). AgentTimeout (a TaskFailure) when it runs out of time.
 */
export async function runAgent(agent: HarborAgent, run: AgentRun): Promise<void> {
  if (agent === 'none') return;
  let failed: { error: unknown } | undefined;
  let captured: Captured | undefined;
  try {
    if (agent === 'oracle') captured = await runOracle(run);
    else if (typeof agent === 'object') captured = await runCommand(agent, run);
    else await runFunction(agent, run);
  } catch (error) {
    failed = { error };
  }
  try {
    await run.timer.run('download agent logs', () => keepAgentLogs(run.env, run.outDir, run.ctx.signal));
  } catch (error) {
    // The agent's own failure is the attempt's (a lost sandbox may well fail the download too).
    failed ??= { error };
  }
  // Written after the download, so a file of the same name in /logs/agent never replaces them.
  if (captured) await saveOutput(run.outDir, '', captured.result);
  if (failed) throw failed.error;
  if (captured?.result.timedOut) throw harborFailure('AgentTimeout', captured.timeout, envContext(run.env));
}
