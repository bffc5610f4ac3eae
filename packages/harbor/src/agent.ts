import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { TransferError, linkSignals, type Environment, type ExecOptions, type ExecResult, type TrialContext } from '@berth/core';
import { INSTRUCTION_PATH, startCommand, type CommandAgent } from './command-agent.js';
import { checkVariables, resolveEnv, type HostEnv } from './env-template.js';
import { scriptCouldNotStart, unstartableScript } from './script-start.js';
import { exceptionInfo, type HarborExceptionInfo } from './exception-info.js';
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
 *   also fires at the task's agent timeout (when the task has one): the attempt waits up to
 *   AGENT_STOP_GRACE_MS for it to stop, then verifies. It runs on the agent phase's network;
 *   `task.users.agent`, `task.workdir` and `task.agentConfig` say how the task expects it to run.
 */
export type HarborAgent = 'oracle' | 'none' | CommandAgent | AgentFunction;
export type AgentFunction = (env: Environment, task: HarborTask, ctx: TrialContext) => Promise<void>;

export function agentName(agent: HarborAgent): string {
  if (typeof agent === 'function') return agent.name || 'custom';
  return typeof agent === 'object' ? 'command' : agent;
}

/** How long an agent function has to stop once its signal fired at the agent timeout. */
export const AGENT_STOP_GRACE_MS = 10_000;

/** A short, single-line tail of a command's stderr, to say in a message why it ended as it did. */
export function stderrTail(result: ExecResult): string {
  const tail = result.stderr.trim().split('\n').slice(-3).join(' | ').slice(-300);
  return tail ? `; stderr: ${tail}` : '';
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
 * A ConfigError before any sandbox starts: an oracle run whose [solution.env] needs host variables
 * that are not set would run wrong. (A task without a solution is the task's own mistake:
 * definitionProblems in task-preflight.ts.)
 */
export function checkAgentCanRun(agent: HarborAgent, task: HarborTask, hostEnv: HostEnv): void {
  if (agent !== 'oracle') return;
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

/** What a command-running agent leaves: its output (kept by runAgent) and how it ended, as harbor records it. */
interface Captured {
  result: ExecResult;
  exception?: HarborExceptionInfo;
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
  // A non-zero exit is not a failure by itself (harbor's oracle records none): the verifier decides.
  if (!result.timedOut) return { result };
  return { result, exception: exceptionInfo('AgentTimeoutError', `the oracle (solution/solve.sh) did not finish within ${task.agentTimeoutSec} s`) };
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
  // As harbor records an installed agent's (a CLI's) timeout or non-zero exit: the verifier still runs.
  if (result.timedOut) return { result, exception: exceptionInfo('AgentTimeoutError', `the agent command did not finish within ${task.agentTimeoutSec} s`) };
  if (result.exitCode !== 0)
    return { result, exception: exceptionInfo('NonZeroAgentExitCodeError', `the agent command exited ${result.exitCode}${stderrTail(result)}`) };
  return { result };
}

/** Resolves with what happened when `ms` passed, unless cancelled first. */
function after<T>(ms: number, value: T): { promise: Promise<T>; cancel: () => void } {
  let handle: NodeJS.Timeout | undefined;
  const promise = new Promise<T>((resolve) => {
    handle = setTimeout(() => resolve(value), ms);
  });
  return { promise, cancel: () => clearTimeout(handle) };
}

/** An agent function, cut at the agent timeout: its signal fires, and it is given a grace to stop. */
async function runFunction(agent: AgentFunction, { env, task, ctx, timer }: AgentRun): Promise<HarborExceptionInfo | undefined> {
  if (task.agentTimeoutSec === undefined) {
    await timer.run('agent', () => agent(env, task, ctx));
    return undefined;
  }
  // The attempt's signal or the agent's timeout; unlinked once the agent is done with it.
  const deadline = linkSignals(ctx.signal);
  const timeout = after(task.agentTimeoutSec * 1000, 'timeout' as const);
  try {
    return await timer.run(
      'agent',
      async () => {
        const running = agent(env, task, { ...ctx, signal: deadline.signal });
        if ((await Promise.race([running, timeout.promise])) !== 'timeout') return undefined;
        const at = new Date();
        // As harbor's wait_for: cancel it and wait for it to stop, so the collect commands and the
        // verifier see a sandbox it no longer writes to; an agent deaf to its signal gets a grace.
        deadline.abort(new Error(`agent timeout (${task.agentTimeoutSec} s)`));
        const grace = after(AGENT_STOP_GRACE_MS, 'still running' as const);
        const stopped = await Promise.race([
          running.then(
            () => 'stopped' as const,
            () => 'stopped' as const,
          ),
          grace.promise,
        ]);
        grace.cancel();
        if (stopped !== 'stopped') running.catch(() => undefined);
        const deaf =
          stopped === 'stopped' ? '' : `; it did not stop within ${AGENT_STOP_GRACE_MS / 1000} s of its signal and may have run on during the verification`;
        return exceptionInfo('AgentTimeoutError', `the agent did not finish within ${task.agentTimeoutSec} s${deaf}`, at);
      },
      (info) => (info ? { timedOut: true } : {}),
    );
  } finally {
    timeout.cancel();
    deadline.dispose();
  }
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
 * timed out: then most of all). Returns what harbor would record in `exception_info` and go on
 * from (the agent's timeout, a command's non-zero exit), for the attempt to record beside its
 * reward; throws only what ends the attempt (the agent function's own error, infrastructure).
 */
export async function runAgent(agent: HarborAgent, run: AgentRun): Promise<HarborExceptionInfo | undefined> {
  if (agent === 'none') return undefined;
  let failed: { error: unknown } | undefined;
  let captured: Captured | undefined;
  let exception: HarborExceptionInfo | undefined;
  try {
    if (agent === 'oracle') captured = await runOracle(run);
    else if (typeof agent === 'object') captured = await runCommand(agent, run);
    else exception = await runFunction(agent, run);
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
  // The oracle's solve.sh that could not even start is the task's mistake, not a run to score.
  const unstartable = agent === 'oracle' && captured ? scriptCouldNotStart(captured.result, '/solution/solve.sh') : undefined;
  if (unstartable) throw await unstartableScript(run.task, 'solution/solve.sh', run.task.solutionDir && join(run.task.solutionDir, 'solve.sh'), unstartable);
  return captured?.exception ?? exception;
}
