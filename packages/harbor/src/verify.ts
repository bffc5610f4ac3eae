import { join, relative } from 'node:path';
import { kindOf } from './path-kind.js';
import { TransferError, type Environment, type TrialContext } from '@berth/core';
import { execTiming, runScript, saveOutput, stderrTail } from './agent.js';
import { resolveEnv, type HostEnv } from './env-template.js';
import { scriptCouldNotStart, unstartableScript } from './script-start.js';
import { envContext, harborFailure, readReward } from './reward.js';
import type { StepTimer } from './steps.js';
import type { HarborOutcome, HarborTask } from './task.js';

interface VerifyRun {
  env: Environment;
  task: HarborTask;
  ctx: TrialContext;
  timer: StepTimer;
  /** <attemptDir>/verifier: /logs/verifier is downloaded here, beside test-stdout.txt / test-stderr.txt. */
  outDir: string;
  hostEnv: HostEnv;
  uploadTests: boolean;
  /** Uploaded to /tests in this order instead of task.testsDir (a step's: the task's tests/, then the step's over it). */
  testsDirs?: readonly string[];
}

/**
 * Upload tests/ to /tests, run /tests/test.sh as harbor does (made executable, run directly, in
 * the task's workdir, as `[verifier] user`, with `[verifier.env]` and the verifier timeout), keep
 * its output, download /logs/verifier and read the reward from it.
 *
 * Only the task's own failures become TaskFailures (a timeout, a missing/empty/invalid reward
 * file). Everything berth throws (a lost sandbox during the upload, a dead engine...) goes on
 * unchanged: it is infrastructure, and its type decides whether the attempt is retried.
 */
export async function runVerifier({ env, task, ctx, timer, outDir, hostEnv, uploadTests, testsDirs }: VerifyRun): Promise<HarborOutcome> {
  const { signal } = ctx;
  // A separate verifier's image may carry the tests itself (harbor uploads nothing then).
  if (uploadTests) {
    await timer.run('upload tests', async () => {
      for (const dir of testsDirs ?? [task.testsDir]) await env.uploadDir(dir, '/tests', { signal });
    });
  }
  // As harbor: [verifier.env] for test.sh only, as the verifier's user, in the task's workdir.
  const verifierEnv = resolveEnv(task.configPath, 'verifier.env', task.env.verifier, hostEnv);
  const result = await timer.run(
    'verifier',
    () =>
      runScript(env, '/tests/test.sh', {
        env: verifierEnv,
        ...(task.users.verifier !== undefined ? { user: task.users.verifier } : {}),
        timeoutMs: task.verifierTimeoutSec * 1000,
        signal,
      }),
    execTiming,
  );
  const unstartable = scriptCouldNotStart(result, '/tests/test.sh');
  if (unstartable) {
    await saveOutput(outDir, 'test-', result).catch(() => undefined);
    const hostTestSh = await lastWith(testsDirs ?? [task.testsDir], 'test.sh');
    throw await unstartableScript(task, hostTestSh ? relative(task.dir, hostTestSh) : 'tests/test.sh', hostTestSh, unstartable);
  }
  const failure = envContext(env);
  let downloadMissing: TransferError | undefined;
  let failed: { error: unknown } | undefined;
  try {
    if (result.timedOut) {
      throw harborFailure('VerifierTimeout', `tests/test.sh did not finish within ${task.verifierTimeoutSec} s`, failure);
    }
    try {
      await timer.run('download verifier logs', () => env.downloadDir('/logs/verifier', outDir, { signal }));
    } catch (error) {
      // Only "it is not there" is the task's business; a transfer that failed because the sandbox
      // died (or anything else) is infrastructure and propagates as is.
      if (!(TransferError.isInstance(error) && error.reason === 'not_found')) throw error;
      downloadMissing = error;
    }
  } catch (error) {
    failed = { error };
  }
  // Written after the download, so a verifier's own file of the same name never replaces what
  // berth captured, and whatever happened above (archived for offline regrading). A local write
  // error must not mask the attempt's own failure.
  const saving = saveOutput(outDir, 'test-', result);
  if (failed) {
    await saving.catch(() => undefined);
    throw failed.error;
  }
  await saving;
  if (downloadMissing) {
    throw harborFailure(
      'RewardFileMissing',
      `/logs/verifier does not exist after tests/test.sh ran (exit ${result.exitCode}${stderrTail(result)})`,
      failure,
      downloadMissing,
    );
  }
  // Say how the verifier ended: "exit 127; stderr: pytest: not found" is the usual answer.
  return readReward(outDir, failure, ` (tests/test.sh exited ${result.exitCode}${stderrTail(result)})`);
}

/** The file `name` in the last of `dirs` that has it (the one a merged upload leaves in place). */
async function lastWith(dirs: readonly string[], name: string): Promise<string | undefined> {
  for (const dir of [...dirs].reverse()) if ((await kindOf(join(dir, name))) === 'file') return join(dir, name);
  return undefined;
}
