import { readFile } from 'node:fs/promises';
import { TaskDefinitionError, type ExecResult } from '@berth/core';

/**
 * Did a script run as harbor runs it (`sh -c <path>`, its #! line deciding) fail to start at all?
 * The shell says so itself, naming the script, with exit 126 or 127: "sh: /tests/test.sh: not
 * found" (busybox; dash adds "1: "), or bash's "bad interpreter". That is the task's mistake (the
 * image lacks its #! interpreter, or the script's line endings are CRLF), never the model's.
 * Returns the shell's words when it did, else undefined.
 */
export function scriptCouldNotStart(result: ExecResult, path: string): string | undefined {
  if (result.timedOut || (result.exitCode !== 126 && result.exitCode !== 127)) return undefined;
  const escaped = path.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  const said = new RegExp(`^sh: (?:(?:line )?\\d+: )?${escaped}: (?:not found|.*bad interpreter.*|cannot execute.*|Permission denied)$`, 'm');
  return result.stderr.match(said)?.[0];
}

/** The #! line of a script's text, for a message ("#!/bin/bash"); undefined without one. */
export function shebangOf(text: string): string | undefined {
  const first = text.split('\n', 1)[0]!.replace(/\r$/, '');
  return first.startsWith('#!') ? first : undefined;
}

/** The TaskDefinitionError for a script that could not start: its file, the shell's words, its #! line. */
export async function unstartableScript(
  task: { id: string; dir: string },
  relPath: string,
  hostPath: string | undefined,
  said: string,
): Promise<TaskDefinitionError> {
  const text = hostPath === undefined ? undefined : await readFile(hostPath, 'utf8').catch(() => undefined);
  const shebang = text === undefined ? undefined : shebangOf(text);
  const why = shebang
    ? `its first line, ${shebang}, names an interpreter the image does not have: install it in the image, or change the #! line`
    : 'it has no #! line and the shell cannot run it: start it with one (#!/bin/sh)';
  return new TaskDefinitionError({
    operation: 'trial',
    path: relPath,
    message: `task ${task.id} (${task.dir}): ${relPath} could not be started in the sandbox ("${said}"): ${why}; nothing was scored`,
  });
}
