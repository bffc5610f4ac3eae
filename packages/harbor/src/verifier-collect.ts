import { join } from 'node:path';
import { serializeError, type Environment, type SerializedError } from '@berth/core';
import { execTiming, saveOutput } from './agent.js';
import type { StepTimer } from './steps.js';
import type { HarborCollectCommand, HarborTask } from './task.js';
import { fieldError, likelyMeant, type TaskToml } from './task-toml.js';

// harbor's `[[verifier.collect]]`: commands run in the agent's sandbox once the agent is done and
// before the artifacts are copied out, so that state only the sandbox holds (a git diff, a
// database dump) becomes files that `artifacts` carry to the verifier (a separate verifier's
// sandbox gets them back at their paths). As in harbor, best effort: a command that fails or
// times out is recorded and never changes the attempt's outcome.

/** harbor's `timeout_sec` default for a collect command. */
export const DEFAULT_COLLECT_TIMEOUT_SEC = 60;

const KNOWN_KEYS = ['command', 'service', 'timeout_sec', 'user'];

/**
 * The `[[verifier.collect]]` commands of a parsed task.toml. harbor runs each in a compose
 * service ("main", its default, is the agent's container); berth runs one sandbox, so another
 * service is refused, as `artifacts` with a service are. Unknown keys are noted, as elsewhere.
 */
export function collectCommandsOf(
  file: string,
  toml: TaskToml,
  notes: string[],
  entries = toml.verifier.collect ?? [],
  field = 'verifier.collect',
): HarborCollectCommand[] {
  return entries.map((entry, i) => {
    const at = `${field}[${i}]`;
    const service = entry.service?.trim() ?? 'main';
    if (service !== 'main') {
      throw fieldError(
        file,
        `${at}.service`,
        `names the compose service "${service}": berth runs one sandbox per phase ("main"), so there is no other service to run it in; remove the field to run it in the agent's sandbox, or run the task with harbor`,
      );
    }
    for (const key of Object.keys(entry).filter((k) => !KNOWN_KEYS.includes(k))) {
      const meant = likelyMeant(`verifier.collect.${key}`)?.replace('verifier.collect.', `${at}.`);
      notes.push(`${at}.${key} is not a harbor task.toml field: ignored (harbor ignores it too)${meant ? `; did you mean ${meant}?` : ''}`);
    }
    return {
      command: entry.command,
      timeoutSec: entry.timeout_sec ?? DEFAULT_COLLECT_TIMEOUT_SEC,
      ...(entry.user !== undefined ? { user: String(entry.user) } : {}),
    };
  });
}

/** What result.json says of each collect command (its timing is in `steps` as `collect <n>`). */
export interface CollectRecord {
  command: string;
  user?: string;
  /** The command's exit code, when it ran to its end or its timeout. */
  exitCode?: number;
  timedOut?: boolean;
  /** berth could not run it (the user does not exist, the sandbox is gone...). */
  error?: SerializedError;
}

/**
 * harbor runs a command in the agent's container with `bash -c`; an image without bash (busybox,
 * alpine) gets sh rather than "bash: not found".
 */
function shell(command: string): string[] {
  return ['sh', '-c', 'command -v bash >/dev/null 2>&1 && exec bash -c "$1"; exec sh -c "$1"', 'sh', command];
}

/**
 * Run the task's collect commands in order, in the agent's sandbox, on the environment's network
 * (harbor switches networks only around the agent's and the verifier's runs), each as its `user`
 * (else the image's) with its timeout. Output goes to <attemptDir>/collect/<n>-stdout.txt and
 * -stderr.txt. Only a cancelled attempt stops here: everything else is recorded and the next
 * command runs, as in harbor.
 */
export async function runCollectCommands(
  env: Environment,
  task: HarborTask,
  attemptDir: string,
  timer: StepTimer,
  signal: AbortSignal,
): Promise<CollectRecord[]> {
  const records: CollectRecord[] = [];
  for (const [i, collect] of (task.verifierCollect ?? []).entries()) {
    const n = i + 1;
    const record: CollectRecord = { command: collect.command, ...(collect.user !== undefined ? { user: collect.user } : {}) };
    records.push(record);
    try {
      const result = await timer.run(
        `collect ${n}`,
        () =>
          env.exec(shell(collect.command), {
            ...(collect.user !== undefined ? { user: collect.user } : {}),
            timeoutMs: collect.timeoutSec * 1000,
            signal,
          }),
        execTiming,
      );
      record.exitCode = result.exitCode;
      if (result.timedOut) record.timedOut = true;
      await saveOutput(join(attemptDir, 'collect'), `${n}-`, result);
    } catch (error) {
      if (signal.aborted) throw error;
      record.error = serializeError(error);
    }
  }
  return records;
}
