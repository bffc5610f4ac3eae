import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { TaskDefinitionError, TaskFailure } from '@berth/core';
import type { HarborOutcome } from './task.js';

/**
 * The stable kinds of task failure this runner raises (TaskFailure `type`), so a report can count
 * them apart: a verifier that wrote nothing is not the same problem as one that wrote garbage.
 * The agent's timeout is none of them: as in harbor, the attempt goes on to the verifier, whose
 * reward counts, and the timeout is recorded beside it (HarborExceptionInfo).
 */
export type HarborFailureKind =
  | 'RewardFileMissing'
  | 'RewardFileEmpty'
  | 'RewardFileInvalid'
  | 'VerifierTimeout'
  // A multi-step task whose steps left no reward because a step's setup.sh or healthcheck failed.
  | 'StepSetupFailed'
  | 'StepHealthcheckFailed';

export interface FailureContext {
  backend?: string;
  environmentId?: string;
}

export function envContext(env: { backend: string; id: string }): FailureContext {
  return { backend: env.backend, environmentId: env.id };
}

export function harborFailure(kind: HarborFailureKind, message: string, ctx: FailureContext = {}, cause?: unknown): TaskFailure {
  return new TaskFailure({
    kind,
    message,
    operation: 'trial',
    ...(ctx.backend ? { backend: ctx.backend } : {}),
    ...(ctx.environmentId ? { environmentId: ctx.environmentId } : {}),
    ...(cause === undefined ? {} : { cause }),
  });
}

// A plain decimal number: Number() alone would also accept "0x1", "Infinity" or "1e999".
const DECIMAL = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

async function readIfPresent(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'EISDIR') return undefined;
    throw error;
  }
}

function fromText(text: string, ctx: FailureContext): HarborOutcome {
  const trimmed = text.trim();
  if (trimmed === '') throw harborFailure('RewardFileEmpty', '/logs/verifier/reward.txt is empty: the verifier wrote no reward', ctx);
  const reward = Number(trimmed);
  if (!DECIMAL.test(trimmed) || !Number.isFinite(reward)) {
    throw harborFailure('RewardFileInvalid', `/logs/verifier/reward.txt does not hold a number: ${JSON.stringify(trimmed.slice(0, 200))}`, ctx);
  }
  return { reward };
}

function fromJson(text: string, ctx: FailureContext): HarborOutcome {
  if (text.trim() === '') throw harborFailure('RewardFileEmpty', '/logs/verifier/reward.json is empty: the verifier wrote no reward', ctx);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw harborFailure('RewardFileInvalid', `/logs/verifier/reward.json is not valid JSON: ${(error as Error).message}`, ctx, error);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw harborFailure('RewardFileInvalid', '/logs/verifier/reward.json must be an object such as { "reward": 1 }', ctx);
  }
  const rewards: Record<string, number> = {};
  for (const [key, value] of Object.entries(parsed)) {
    // As harbor: every value is a finite number, or the file is invalid (a string "NaN" included).
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      throw harborFailure('RewardFileInvalid', `/logs/verifier/reward.json: "${key}" is ${JSON.stringify(value)?.slice(0, 60)}, not a finite number`, ctx);
    }
    rewards[key] = value;
  }
  const names = Object.keys(rewards);
  // "reward" is the score; a file with a single numeric field (e.g. { "accuracy": 0.5 }) means that one.
  const reward = 'reward' in parsed ? rewards.reward : names.length === 1 ? rewards[names[0]!] : undefined;
  if (reward === undefined) {
    // harbor's rule (its primary reward: "reward", else the only field) finds no score here: with
    // several named fields harbor averages each one apart and the trial has none. A verifier
    // written so is the task's mistake, not a model's 0.
    throw new TaskDefinitionError({
      operation: 'trial',
      path: 'tests/test.sh',
      ...(ctx.backend ? { backend: ctx.backend } : {}),
      ...(ctx.environmentId ? { environmentId: ctx.environmentId } : {}),
      message:
        `/logs/verifier/reward.json has ${names.length ? `the fields ${names.join(', ')} and` : 'no fields and'} no "reward": the trial's score is "reward", ` +
        'or the only field when there is just one (harbor\'s rule), so this file scores nothing; have tests/test.sh write "reward" (beside the other fields, which are kept); nothing was scored',
    });
  }
  return { reward, rewards };
}

/**
 * The reward the verifier left in the downloaded copy of /logs/verifier: reward.json first
 * ({ "reward": n, ... }: every field is a number and goes to `rewards`), else reward.txt (a
 * number), in harbor's order. A missing,
 * empty or unparseable file is a TaskFailure of its own kind: the sandbox worked, the task did not.
 * `detail` is appended to the "missing" message (how the verifier ended).
 */
export async function readReward(localVerifierDir: string, ctx: FailureContext = {}, detail = ''): Promise<HarborOutcome> {
  const json = await readIfPresent(join(localVerifierDir, 'reward.json'));
  if (json !== undefined) return fromJson(json, ctx);
  const text = await readIfPresent(join(localVerifierDir, 'reward.txt'));
  if (text !== undefined) return fromText(text, ctx);
  throw harborFailure('RewardFileMissing', `the verifier wrote neither /logs/verifier/reward.txt nor /logs/verifier/reward.json${detail}`, ctx);
}
