import { stat } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { ConfigError, TransferError, serializeError, type Environment, type SerializedError } from '@berth/core';
import type { HarborTask } from './task.js';

/** What result.json says of each artifact: where it went, or why it is not there. */
export interface ArtifactRecord {
  source: string;
  /** Relative to the attempt directory. */
  destination: string;
  status: 'copied' | 'missing' | 'failed';
  error?: SerializedError;
}

/** The convention directory harbor always collects, besides the task's `artifacts`. */
const CONVENTION = '/logs/artifacts';

/** Where the convention directory's copy holds a source inside it, if it is inside. */
function withinConvention(source: string): string | undefined {
  return source.startsWith(`${CONVENTION}/`) ? join('artifacts', posix.relative(CONVENTION, source)) : undefined;
}

/**
 * An entry inside the convention directory (`/logs/artifacts/model.patch`, as tasks that make it
 * with `[[verifier.collect]]` list it) and without a destination of its own: the convention
 * directory's copy holds it, as in harbor, so it is neither downloaded nor restored twice.
 */
export function heldByConvention(record: Pick<ArtifactRecord, 'source' | 'destination'>): boolean {
  return withinConvention(record.source) === record.destination;
}

async function copyOut(env: Environment, source: string, local: string, signal: AbortSignal): Promise<void> {
  try {
    await env.downloadDir(source, local, { signal });
  } catch (error) {
    // A file, not a directory: the caller asked for the wrong kind, which we can tell and fix.
    if (!(ConfigError.isInstance(error) && error.path === 'remotePath')) throw error;
    await env.downloadFile(source, local, { signal });
  }
}

/**
 * Copy /logs/artifacts and every `artifacts` entry into <attemptDir>/artifacts/. Best effort, as
 * in harbor: a missing or failed artifact is recorded and never changes the attempt's outcome.
 * Relative sources are taken from the workdir.
 */
export async function collectArtifacts(env: Environment, task: HarborTask, attemptDir: string, signal: AbortSignal): Promise<ArtifactRecord[]> {
  const wanted: Array<{ source: string; destination: string; within?: boolean }> = [{ source: CONVENTION, destination: 'artifacts' }];
  for (const artifact of task.artifacts) {
    const source = posix.isAbsolute(artifact.source) ? artifact.source : posix.join(task.workdir ?? '/', artifact.source);
    const held = artifact.destination === undefined ? withinConvention(source) : undefined;
    if (held) wanted.push({ source, destination: held, within: true });
    else wanted.push({ source, destination: join('artifacts', artifact.destination ?? posix.basename(source)) });
  }
  const records: ArtifactRecord[] = [];
  for (const { source, destination, within } of wanted) {
    if (within) {
      // Not downloaded twice (the second copy would land on the first): there, or not.
      const there = await stat(join(attemptDir, destination)).then(
        () => true,
        () => false,
      );
      records.push({ source, destination, status: there ? 'copied' : 'missing' });
      continue;
    }
    try {
      await copyOut(env, source, join(attemptDir, destination), signal);
      records.push({ source, destination, status: 'copied' });
    } catch (error) {
      const missing = TransferError.isInstance(error) && error.reason === 'not_found';
      // An empty convention directory is the common case: not worth a record.
      if (missing && source === CONVENTION) continue;
      records.push({ source, destination, status: missing ? 'missing' : 'failed', ...(missing ? {} : { error: serializeError(error) }) });
    }
  }
  return records;
}
