import { createHash } from 'node:crypto';
import { closeSync, existsSync, ftruncateSync, fstatSync, mkdirSync, openSync, readFileSync, statSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { ConfigError, remedied } from '../errors.js';
import { setAside } from '../set-aside.js';
import { RunMismatchError, identityChanges, type JournalIdentity, type RunIdentity } from './run-identity.js';
import type { AttemptRecord, JsonValue } from './types.js';

/**
 * An append-only JSONL journal of a run: a header naming the run (its tasks, the options that
 * change results and the caller's run identity), then a `start` line when an attempt begins and an
 * `attempt` line when it settles, each with the task's version (its content hash, when the caller
 * gives one); a `session` line each time the run is resumed. Each line is written with one
 * write(2) as it happens, so a crash (even SIGKILL) loses at most the line being written; resuming
 * reuses every settled attempt of an unchanged task and never runs one twice.
 */

export const JOURNAL_VERSION = 2;

export interface JournalHeader {
  type: 'header';
  version: number;
  fingerprint: string;
  taskCount: number;
  taskIds: string[];
  maxAttempts: number;
  scoreField: string;
  identity: RunIdentity;
  createdAt: number;
}

interface StartLine {
  type: 'start';
  taskId: string;
  attempt: number;
  at: number;
  taskVersion?: string;
}

interface AttemptLine {
  type: 'attempt';
  record: AttemptRecord;
  taskVersion?: string;
}

/** A run resumed from this journal: earlier sessions' time is summed from these. */
interface SessionLine {
  type: 'session';
  at: number;
}

type JournalLine = JournalHeader | StartLine | AttemptLine | SessionLine;

export type { JournalIdentity };

export function journalFingerprint(identity: JournalIdentity): string {
  const named = Object.fromEntries(Object.entries(identity.identity ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return createHash('sha256')
    .update(
      JSON.stringify({ v: JOURNAL_VERSION, tasks: identity.taskIds, maxAttempts: identity.maxAttempts, scoreField: identity.scoreField, identity: named }),
    )
    .digest('hex');
}

export interface JournalOpenOptions {
  /** Each task's version (e.g. a hash of its files): attempts journaled under another are not reused. */
  taskVersions?: ReadonlyMap<string, string>;
  /** Start over: an existing journal is moved aside (to `<path>.replaced-<time>`), never deleted. */
  fresh?: boolean;
}

export interface JournalState {
  /** Settled attempts by task id, in attempt order (only those of the task's current version). */
  attempts: Map<string, AttemptRecord[]>;
  /** Attempts that started but never settled: the process died under them. */
  interrupted: number;
  /** Tasks whose journaled attempts were made under another version of the task: run again. */
  changedTasks: string[];
  /** Time the earlier sessions of this run took, each from its start to its last journaled moment. */
  priorDurationMs: number;
}

const START_OVER = 'pass fresh: true to start over (the old journal is kept beside it), or use another journal path';

/** The refusal `compose` words around the way on (START_OVER), which it names as its remedy. */
function mismatch(path: string, compose: (startOver: string) => string, changes: readonly string[]): RunMismatchError {
  return new RunMismatchError({ operation: 'config', path: 'journal', location: path, changes, ...remedied('fresh-journal', START_OVER, compose) });
}

/** Moves an existing, non-empty journal aside; returns where it went. */
export function setJournalAside(path: string, now: number): string | undefined {
  if (!existsSync(path) || statSync(path).size === 0) return undefined;
  return setAside(path, now);
}

export class RunJournal {
  readonly path: string;
  #fd: number;
  readonly #versions: ReadonlyMap<string, string>;

  private constructor(path: string, fd: number, versions: ReadonlyMap<string, string>) {
    this.path = path;
    this.#fd = fd;
    this.#versions = versions;
  }

  /** Open (or create) the journal; refuses one written for another run. */
  static open(path: string, identity: JournalIdentity, now: number, options: JournalOpenOptions = {}): { journal: RunJournal; state: JournalState } {
    mkdirSync(dirname(path), { recursive: true });
    if (options.fresh) setJournalAside(path, now);
    const versions = options.taskVersions ?? new Map<string, string>();
    const fd = openSync(path, 'a+');
    try {
      const state = RunJournal.#replay(fd, path, identity, versions);
      const journal = new RunJournal(path, fd, versions);
      if (!state) {
        const header: JournalHeader = {
          type: 'header',
          version: JOURNAL_VERSION,
          fingerprint: journalFingerprint(identity),
          taskCount: identity.taskIds.length,
          taskIds: [...identity.taskIds],
          maxAttempts: identity.maxAttempts,
          scoreField: identity.scoreField,
          identity: { ...(identity.identity ?? {}) },
          createdAt: now,
        };
        journal.#append(header);
        return { journal, state: { attempts: new Map(), interrupted: 0, changedTasks: [], priorDurationMs: 0 } };
      }
      journal.#append({ type: 'session', at: now });
      return { journal, state };
    } catch (error) {
      closeSync(fd);
      throw error;
    }
  }

  static #parse(fd: number, path: string): JournalLine[] {
    const raw = readFileSync(path);
    // A crash mid-write leaves a last line without its newline: drop it and cut the file there.
    const cut = raw.lastIndexOf(0x0a) + 1;
    if (cut < raw.length) ftruncateSync(fd, cut);
    const lines = raw
      .subarray(0, cut)
      .toString('utf8')
      .split('\n')
      .filter((l) => l.length > 0);
    return lines.map((line, i) => {
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
  }

  static #checkHeader(path: string, header: JournalLine | undefined, identity: JournalIdentity): void {
    if (header?.type !== 'header') {
      throw new ConfigError({ operation: 'config', path: 'journal', message: `${path} is not a berth run journal (no header line)` });
    }
    if (header.version !== JOURNAL_VERSION) {
      const change = `journal version (${header.version} there, ${JOURNAL_VERSION} here)`;
      throw mismatch(
        path,
        (startOver) =>
          `journal ${path} was written by another berth (version ${header.version}; this one writes ${JOURNAL_VERSION}) and cannot be resumed; ${startOver}`,
        [change],
      );
    }
    if (header.fingerprint === journalFingerprint(identity)) return;
    const changes = identityChanges(header, identity);
    if (changes.length === 0) changes.push('the order of the tasks');
    throw mismatch(
      path,
      (startOver) => `journal ${path} belongs to a different run: ${changes.join('; ')}; resume with the same tasks and options, or ${startOver}`,
      changes,
    );
  }

  static #replay(fd: number, path: string, identity: JournalIdentity, versions: ReadonlyMap<string, string>): JournalState | undefined {
    if (fstatSync(fd).size === 0) return undefined;
    const parsed = RunJournal.#parse(fd, path);
    if (parsed.length === 0) {
      // Only a torn header: start afresh in the same file.
      ftruncateSync(fd, 0);
      return undefined;
    }
    const header = parsed[0] as JournalHeader;
    RunJournal.#checkHeader(path, header, identity);
    // A line of another version of its task is history, not a result of this run.
    const current = (taskId: string, version: string | undefined) => versions.get(taskId) === version;
    const attempts = new Map<string, AttemptRecord[]>();
    const started = new Set<string>();
    const changed = new Set<string>();
    let priorDurationMs = 0;
    let sessionStart = header.createdAt;
    let last = header.createdAt;
    for (const line of parsed.slice(1)) {
      if (line.type === 'session') {
        priorDurationMs += Math.max(0, last - sessionStart);
        sessionStart = last = line.at;
      } else if (line.type === 'start') {
        last = Math.max(last, line.at);
        if (current(line.taskId, line.taskVersion)) started.add(`${line.taskId}\u0000${line.attempt}`);
      } else if (line.type === 'attempt') {
        last = Math.max(last, line.record.endedAt);
        const { taskId } = line.record;
        if (!current(taskId, line.taskVersion)) {
          changed.add(taskId);
          continue;
        }
        const list = attempts.get(taskId) ?? [];
        list.push(line.record);
        attempts.set(taskId, list);
        started.delete(`${taskId}\u0000${line.record.attempt}`);
      }
    }
    for (const list of attempts.values()) list.sort((a, b) => a.attempt - b.attempt);
    for (const taskId of attempts.keys()) changed.delete(taskId);
    priorDurationMs += Math.max(0, last - sessionStart);
    return { attempts, interrupted: started.size, changedTasks: [...changed].sort(), priorDurationMs };
  }

  #append(line: JournalLine): void {
    // One write per line: the kernel has it even if the process is killed right after.
    writeSync(this.#fd, `${JSON.stringify(line)}\n`);
  }

  #version(taskId: string): { taskVersion?: string } {
    const v = this.#versions.get(taskId);
    return v === undefined ? {} : { taskVersion: v };
  }

  started(taskId: string, attempt: number, at: number): void {
    this.#append({ type: 'start', taskId, attempt, at, ...this.#version(taskId) });
  }

  settled<O extends JsonValue>(record: AttemptRecord<O>): void {
    this.#append({ type: 'attempt', record: record as AttemptRecord, ...this.#version(record.taskId) });
  }

  close(): void {
    closeSync(this.#fd);
  }
}
