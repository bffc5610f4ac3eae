import { setTimeout as sleep } from 'node:timers/promises';
import { StartupTimeoutError, sameNetwork, type Environment } from '@berth/core';
import type { HarborHealthcheck, HarborNetwork, HarborTask } from './task.js';

// What harbor does to a sandbox around the agent and the verifier, besides running them.

const LOG_DIRS = ['/logs/agent', '/logs/verifier', '/logs/artifacts'];

/**
 * As root: the log directories harbor makes (open to every user, so a task's non-root agent or
 * verifier can write there), without stale reward files.
 */
export async function prepareSandbox(env: Environment, signal: AbortSignal): Promise<void> {
  const script = `mkdir -p ${LOG_DIRS.join(' ')} && chmod 777 ${LOG_DIRS.join(' ')} && rm -f /logs/verifier/reward.txt /logs/verifier/reward.json`;
  const result = await env.exec(['sh', '-c', script], { user: '0', signal });
  if (result.exitCode !== 0) throw new Error(`preparing /logs failed (exit ${result.exitCode}): ${result.stderr.trim()}`);
}

/** A prebuilt task's environment/ goes into the workdir (the image's, when the task names none), as harbor copies it. */
export async function copyEnvironmentDir(env: Environment, task: HarborTask, signal: AbortSignal): Promise<void> {
  if (!task.environmentDir) return;
  let target = task.workdir;
  if (!target) {
    const pwd = await env.exec(['pwd'], { signal });
    target = pwd.stdout.trim() || '/';
  }
  await env.uploadDir(task.environmentDir, target, { signal });
}

/** Runs one named step of the setup (a trial times each; a person's shell just runs them). */
export type SetupStep = <T>(name: string, work: () => Promise<T>) => Promise<T>;

/**
 * What harbor does to a started sandbox before the agent: /logs made, a prebuilt task's
 * environment/ copied into the workdir, the healthcheck awaited. One sequence for trials and for
 * `startTaskSandbox`, so a shell sees the sandbox a trial would.
 */
export async function setUpTaskSandbox(env: Environment, task: HarborTask, signal: AbortSignal, step: SetupStep = (_name, work) => work()): Promise<void> {
  await step('prepare', () => prepareSandbox(env, signal));
  if (task.environmentDir) await step('copy environment', () => copyEnvironmentDir(env, task, signal));
  if (task.healthcheck) await step('healthcheck', () => awaitHealthy(env, task.healthcheck!, signal));
}

/**
 * `[environment.healthcheck]` as compose runs one: every start_interval during the start period
 * (failures there do not count), then every interval, each try cut at timeout; `retries`
 * failures in a row after the start period and the sandbox never became ready, which is the
 * infrastructure's failure (StartupTimeoutError, retried), never a score.
 */
export async function awaitHealthy(env: Environment, check: HarborHealthcheck, signal: AbortSignal): Promise<void> {
  const started = Date.now();
  let failures = 0;
  let last = '';
  for (;;) {
    const result = await env.exec(['sh', '-c', check.command], { timeoutMs: check.timeoutSec * 1000, signal });
    if (result.exitCode === 0 && !result.timedOut) return;
    last = result.timedOut ? `timed out after ${check.timeoutSec} s` : `exit ${result.exitCode}: ${(result.stderr || result.stdout).trim().slice(-200)}`;
    const inStartPeriod = Date.now() - started < check.startPeriodSec * 1000;
    if (!inStartPeriod && ++failures >= Math.max(1, check.retries)) {
      throw new StartupTimeoutError({
        operation: 'start',
        backend: env.backend,
        environmentId: env.id,
        timeoutMs: Date.now() - started,
        lastStatus: last,
        message: `the task's healthcheck (${check.command}) did not pass: ${failures} failure(s) in a row, the last ${last}`,
      });
    }
    await sleep((inStartPeriod ? check.startIntervalSec : check.intervalSec) * 1000, undefined, { signal });
  }
}

/**
 * Run `work` on a phase's network, then go back to the environment's (harbor switches only
 * around the agent's run and the verifier's). A sandbox that never switches is left alone.
 */
export async function onNetwork<T>(env: Environment, task: HarborTask, mode: HarborNetwork, work: () => Promise<T>): Promise<T> {
  if (sameNetwork(mode, env.network)) return work();
  await env.setNetwork(mode);
  try {
    return await work();
  } finally {
    // After a failed phase the sandbox may be gone: its own error is the one to report.
    await env.setNetwork(task.network.environment).catch(() => undefined);
  }
}
