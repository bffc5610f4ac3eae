import type { SnapshotUse } from './snapshot-setup.js';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { ConfigError, classifyFailure, redactSecrets, serializeError, type ClassifiedFailure, type SerializedError } from '@berth/core';
import type { ArtifactRecord } from './artifacts.js';
import type { HarborExceptionInfo } from './exception-info.js';
import type { StepResultRecord } from './multi-step-reward.js';
import type { ResolvedEnvironment } from './spec.js';
import type { StepTiming } from './steps.js';
import type { CollectRecord } from './verifier-collect.js';
import type { HarborOutcome } from './task.js';

/** A failed attempt as written to result.json: what kind of failure, and the whole cause chain. */
export type AttemptFailureJson = ClassifiedFailure & { error: SerializedError };

/** `<jobDir>/<taskId>/attempt-<n>/result.json`: one per attempt, failed ones included. */
export interface AttemptResultFile {
  taskId: string;
  /** The task's content hash when this attempt ran: a later run of a changed task sets this attempt aside, never deletes it. */
  taskVersion?: string;
  attempt: number;
  /** 'oracle', 'none', or the agent function's name. */
  agent: string;
  backend: string;
  /** The sandbox's id (absent when it was never created). */
  /** The snapshot this attempt's sandbox started from (runHarborJob's snapshotSetup), and the setup sandbox it was taken of. */
  snapshot?: SnapshotUse;
  environmentId?: string;
  /** A separate verifier's sandbox, when the task has one. */
  verifierEnvironmentId?: string;
  image: string;
  startedAt: string;
  endedAt: string;
  durationMs: number;
  steps: StepTiming[];
  /** What the sandbox was made with: image or build, network per phase, env names (never values), resources, users, timeouts. */
  environment?: ResolvedEnvironment;
  /** task.toml settings accepted without being applied, or not applied by this backend, and why. */
  notes?: string[];
  /** Each `[[verifier.collect]]` command: how it ended (its output is in collect/<n>-stdout.txt, -stderr.txt). */
  collect?: CollectRecord[];
  /** /logs/artifacts and the task's `artifacts`, copied into artifacts/ (best effort, each recorded). */
  artifacts?: ArtifactRecord[];
  outcome?: HarborOutcome;
  failure?: AttemptFailureJson;
  /**
   * A multi-step task's steps that ran, in order (harbor's `step_results`): each one's verifier
   * result or exception; their files are under steps/<name>/ (agent/, verifier/, artifacts/, collect/).
   */
  stepResults?: StepResultRecord[];
  /**
   * harbor's `exception_info`: the agent timed out, or a command agent exited non-zero, and the
   * attempt went on to collect, artifacts and the verifier. Beside the outcome (whose reward
   * counts) or the verifier's failure.
   */
  exceptionInfo?: HarborExceptionInfo;
  /** Teardown failed after the attempt had settled; recorded, never allowed to mask the attempt's own result. */
  teardownError?: SerializedError;
}

/**
 * Where an attempt's files go. The task id becomes a path component (and the directory is cleared
 * before each attempt), so an id that could point elsewhere ('..', 'a/b') is refused.
 */
export function attemptDir(jobDir: string, taskId: string, attempt: number): string {
  if (taskId === '' || taskId === '.' || taskId === '..' || /[/\\\0]/.test(taskId)) {
    throw new ConfigError({
      operation: 'config',
      path: 'task.id',
      message: `task id ${JSON.stringify(taskId)} cannot name a directory in the job directory; use the task directory's name`,
    });
  }
  return join(jobDir, taskId, `attempt-${attempt}`);
}

/** Classification plus the serialised cause chain; the message is redacted like the chain is. */
export function describeFailure(error: unknown): AttemptFailureJson {
  const classified = classifyFailure(error);
  return { ...classified, message: redactSecrets(classified.message), error: serializeError(error) };
}

/** Write JSON through a temporary file and a rename, so a reader (or a crash) never sees half a file. */
export async function writeJsonFile(path: string, value: unknown): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, `${JSON.stringify(value, null, 2)}\n`);
  await rename(tmp, path);
}
