import type { TaskFailure } from '@berth/core';
import type { ArtifactRecord } from './artifacts.js';
import { harborFailure, type HarborFailureKind } from './reward.js';
import type { HarborOutcome, HarborStep, HarborStepSummary, HarborTask } from './task.js';
import type { CollectRecord } from './verifier-collect.js';

// What harbor's MultiStepTrial decides from the steps' results (trial/multi_step.py at harbor
// 39b85872, v0.22.0): whether to stop after a step (`_should_stop_after_step`,
// `_min_reward_failure`) and the trial's reward (`_select_multi_step_reward`,
// `_aggregate_step_rewards`). Pure functions, so each rule is tested on its own.

/** harbor's step `exception_info`: what went wrong first in the step (its class name, as harbor's result says it). */
export type StepExceptionInfo = { exceptionType: string; exceptionMessage: string; occurredAt: string };

/** What a step's verifier scored: harbor's `verifier_result`. */
export type StepVerifierResult = { reward: number; rewards?: Record<string, number> };

/** What result.json says of one step that ran (harbor's StepResult); its files are under steps/<name>/. */
export interface StepResultRecord {
  name: string;
  startedAt: string;
  endedAt?: string;
  verifierResult?: StepVerifierResult;
  exceptionInfo?: StepExceptionInfo;
  /** The verifier's task failure in full (no reward, a verifier timeout...), when it had one. */
  failure?: { type: string; message: string };
  /** setup.sh's exit code, when the step has one (its output is in steps/<name>/setup-stdout.txt, -stderr.txt). */
  setupExitCode?: number;
  /** Why no later step ran, when this step stopped the run. */
  stoppedRun?: string;
  collect?: CollectRecord[];
  artifacts?: ArtifactRecord[];
}

/** A step's rewards as harbor keeps them: reward.json's fields, or { reward } from reward.txt. */
function rewardsOf(result: StepVerifierResult): Record<string, number> {
  return result.rewards ?? { reward: result.reward };
}

/**
 * Why no step after this one runs, or undefined: the step failed without a verifier result
 * (setup.sh, its healthcheck, its verifier), or its rewards miss `min_reward` (a number gates on
 * "reward", a table on each of its keys; a missing key, or no result at all, is -inf).
 */
export function stopReason(step: Pick<HarborStep, 'name' | 'minReward'>, record: StepResultRecord): string | undefined {
  if (record.exceptionInfo && !record.verifierResult) return `step "${step.name}" failed (${record.exceptionInfo.exceptionType})`;
  if (step.minReward === undefined) return undefined;
  const thresholds = typeof step.minReward === 'number' ? { reward: step.minReward } : step.minReward;
  const rewards = record.verifierResult ? rewardsOf(record.verifierResult) : undefined;
  for (const [key, threshold] of Object.entries(thresholds)) {
    const actual = rewards?.[key] ?? Number.NEGATIVE_INFINITY;
    if (actual < threshold) return `step "${step.name}": ${key}=${actual} below min_reward ${threshold}`;
  }
  return undefined;
}

/**
 * The attempt's verifier result from its steps': "final" takes the last step that ran as it is;
 * "mean" (harbor's default) takes each key's mean over the steps that have a result (a key a step
 * lacks counts 0 there). The reward is the "reward" key, else the only key, else the mean of the
 * steps' own rewards. Undefined when no step that counts has a result.
 */
export function selectReward(strategy: HarborTask['multiStepRewardStrategy'], records: readonly StepResultRecord[]): StepVerifierResult | undefined {
  if (strategy === 'final') return records.at(-1)?.verifierResult;
  const results = records.flatMap((r) => (r.verifierResult ? [r.verifierResult] : []));
  if (results.length === 0) return undefined;
  const dicts = results.map(rewardsOf);
  const keys = [...new Set(dicts.flatMap((d) => Object.keys(d)))].sort();
  const means = Object.fromEntries(keys.map((key) => [key, dicts.reduce((sum, d) => sum + (d[key] ?? 0), 0) / dicts.length]));
  const reward = 'reward' in means ? means.reward! : keys.length === 1 ? means[keys[0]!]! : results.reduce((sum, r) => sum + r.reward, 0) / results.length;
  // Only reward.json's fields are worth repeating; a reward.txt task's means are { reward } alone.
  return results.some((r) => r.rewards) ? { reward, rewards: means } : { reward };
}

/** Each declared step, in order: its reward or what went wrong, or skipped (for the journal and report.json). */
export function stepSummaries(steps: readonly HarborStep[], records: readonly StepResultRecord[]): HarborStepSummary[] {
  return steps.map((step) => {
    const record = records.find((r) => r.name === step.name);
    if (!record) return { name: step.name, skipped: true };
    return {
      name: step.name,
      ...(record.verifierResult ? { reward: record.verifierResult.reward } : {}),
      ...(record.exceptionInfo ? { exceptionType: record.exceptionInfo.exceptionType } : {}),
    };
  });
}

/**
 * The attempt's outcome, or the TaskFailure when no step that counts left a reward: the verifier's
 * own failure kind when it had one (RewardFileMissing...), else what stopped the step's setup.
 */
export function multiStepOutcome(
  task: HarborTask,
  records: readonly StepResultRecord[],
  ctx: { backend: string; environmentId: string },
): HarborOutcome | TaskFailure {
  const steps = stepSummaries(task.steps ?? [], records);
  const selected = selectReward(task.multiStepRewardStrategy, records);
  if (selected) return { ...selected, steps };
  const culprit = records.at(-1);
  const kind: HarborFailureKind =
    (culprit?.failure?.type as HarborFailureKind | undefined) ??
    (culprit?.exceptionInfo?.exceptionType === 'HealthcheckError' ? 'StepHealthcheckFailed' : 'StepSetupFailed');
  const why = culprit?.exceptionInfo ? `${culprit.exceptionInfo.exceptionType}: ${culprit.exceptionInfo.exceptionMessage}` : 'no step ran';
  const strategy = task.multiStepRewardStrategy ?? 'mean';
  return harborFailure(kind, `no step left a reward for the "${strategy}" strategy; step "${culprit?.name ?? '?'}": ${why}`, ctx);
}
