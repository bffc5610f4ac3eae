import { createHash } from 'node:crypto';
import { closeSync, ftruncateSync, fstatSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { ConfigError } from '../errors.js';
import type { AttemptRecord, JsonValue } from './types.js';

/**
 * An append-only JSONL journal of a run: a header naming the run (its tasks and the options that
 * change results), then a `start` line when an attempt begins and an `attempt` line when it
 * settles; a `session` line each time the run is resumed. Each line is written with one write(2) as it happens, so a crash (even SIGKILL) loses at
 * most the line being written; resuming reuses every settled attempt and never runs one twice.
 */

export const JOURNAL_VERSION = 1;

export interface JournalHeader {
  type: 'header';
  version: number;
  fingerprint: string;
  taskCount: number;
  maxAttempts: number;
  scoreField: string;
  createdAt: number;
}

interface StartLine {
  type: 'start';
  taskId: string;
  attempt: number;
  at: number;
}

interface AttemptLine {
  type: 'attempt';
  record: AttemptRecord;
}

/** A run resumed from this journal: earlier sessions' time is summed from these. */
interface SessionLine {
  type: 'session';
  at: number;
}

type JournalLine = JournalHeader | StartLine | AttemptLine | SessionLine;

export interface JournalIdentity {
  taskIds: readonly string[];
  maxAttempts: number;
  scoreField: string;
}

export function journalFingerprint(identity: JournalIdentity): string {
  return createHash('sha256')
    .update(JSON.stringify({ v: JOURNAL_VERSION, tasks: identity.taskIds, maxAttempts: identity.maxAttempts, scoreField: identity.scoreField }))
    .digest('hex');
}

export interface JournalState {
  /** Settled attempts by task id, in attempt order. */
  attempts: Map<string, AttemptRecord[]>;
  /** Attempts that started but never settled: the process died under them. */
  interrupted: number;
  /** Time the earlier sessions of this run took, each from its start to its last journaled moment. */
  priorDurationMs: number;
}

export class RunJournal {
  readonly path: string;
  #fd: number;

  private constructor(path: string, fd: number) {
    this.path = path;
    this.#fd = fd;
  }

  /** Open (or create) the journal; refuses one written for another run. */
  static open(path: string, identity: JournalIdentity, now: number): { journal: RunJournal; state: JournalState } {
    mkdirSync(dirname(path), { recursive: true });
    const fd = openSync(path, 'a+');
    try {
      const state = RunJournal.#replay(fd, path, identity);
      const journal = new RunJournal(path, fd);
      if (!state) {
        const header: JournalHeader = {
          type: 'header',
          version: JOURNAL_VERSION,
          fingerprint: journalFingerprint(identity),
          taskCount: identity.taskIds.length,
          maxAttempts: identity.maxAttempts,
          scoreField: identity.scoreField,
          createdAt: now,
        };
        journal.#append(header);
        return { journal, state: { attempts: new Map(), interrupted: 0, priorDurationMs: 0 } };
      }
      journal.#append({ type: 'session', at: now });
      return { journal, state };
    } catch (error) {
      closeSync(fd);
      throw error;
    }
  }

  static #replay(fd: number, path: string, identity: JournalIdentity): JournalState | undefined {
    const size = fstatSync(fd).size;
    if (size === 0) return undefined;
    const raw = readFileSync(path);
    // A crash mid-write leaves a last line without its newline: drop it and cut the file there.
    const cut = raw.lastIndexOf(0x0a) + 1;
    if (cut < raw.length) ftruncateSync(fd, cut);
    let lines = raw.subarray(0, cut).toString('utf8').split('\n');
    lines = lines.filter((l) => l.length > 0);
    const parsed: JournalLine[] = lines.map((line, i) => {
      try {
        return JSON.parse(line) as JournalLine;
      } catch {
        throw new ConfigError({
          operation: 'config',
          path: 'journal',
          message: `journal ${path} is corrupt at line ${i + 1} (not a crash artifact: only the last line may be torn); move it aside to start afresh`,
        });
      }
    });
    if (parsed.length === 0) {
      // Only a torn header: start afresh in the same file.
      ftruncateSync(fd, 0);
      return undefined;
    }
    const header = parsed[0];
    if (!header || header.type !== 'header') {
      throw new ConfigError({ operation: 'config', path: 'journal', message: `${path} is not a berth run journal (no header line)` });
    }
    if (header.version !== JOURNAL_VERSION) {
      throw new ConfigError({ operation: 'config', path: 'journal', message: `journal ${path} has version ${header.version}; this berth writes version ${JOURNAL_VERSION}` });
    }
    if (header.fingerprint !== journalFingerprint(identity)) {
      const diffs: string[] = [];
      if (header.taskCount !== identity.taskIds.length) diffs.push(`${header.taskCount} tasks there, ${identity.taskIds.length} here`);
      else diffs.push('the task ids or their order differ');
      if (header.maxAttempts !== identity.maxAttempts) diffs.push(`maxAttempts ${header.maxAttempts} there, ${identity.maxAttempts} here`);
      if (header.scoreField !== identity.scoreField) diffs.push(`scoreField "${header.scoreField}" there, "${identity.scoreField}" here`);
      throw new ConfigError({
        operation: 'config',
        path: 'journal',
        message: `journal ${path} belongs to a different run (${diffs.join('; ')}); resume with the same tasks and options, or use a new journal path`,
      });
    }
    const attempts = new Map<string, AttemptRecord[]>();
    const started = new Set<string>();
    let priorDurationMs = 0;
    let sessionStart = header.createdAt;
    let last = header.createdAt;
    for (const line of parsed.slice(1)) {
      if (line.type === 'session') {
        priorDurationMs += Math.max(0, last - sessionStart);
        sessionStart = last = line.at;
      } else if (line.type === 'start') {
        last = Math.max(last, line.at);
        started.add(`${line.taskId}\u0000${line.attempt}`);
      } else if (line.type === 'attempt') {
        last = Math.max(last, line.record.endedAt);
        const list = attempts.get(line.record.taskId) ?? [];
        list.push(line.record);
        attempts.set(line.record.taskId, list);
        started.delete(`${line.record.taskId}\u0000${line.record.attempt}`);
      }
    }
    for (const list of attempts.values()) list.sort((a, b) => a.attempt - b.attempt);
    priorDurationMs += Math.max(0, last - sessionStart);
    return { attempts, interrupted: started.size, priorDurationMs };
  }

  #append(line: JournalLine): void {
    // One write per line: the kernel has it even if the process is killed right after.
    writeSync(this.#fd, JSON.stringify(line) + '\n');
  }

  started(taskId: string, attempt: number, at: number): void {
    this.#append({ type: 'start', taskId, attempt, at });
  }

  settled<O extends JsonValue>(record: AttemptRecord<O>): void {
    this.#append({ type: 'attempt', record: record as AttemptRecord });
  }

  close(): void {
    closeSync(this.#fd);
  }
}
