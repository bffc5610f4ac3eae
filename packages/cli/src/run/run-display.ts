import type { Writable } from 'node:stream';
import type { AttemptFailure, RunEvents, RunProgress, TaskRecord, TypedEvents } from '@berth/core';
import { LiveDisplay } from './live-display.js';
import { PlainDisplay } from './plain-display.js';

/** What `berth run` shows while tasks run. */
export interface RunDisplay {
  progress(progress: RunProgress): void;
  settled(record: TaskRecord): void;
  retry(e: { taskId: string; attempt: number; delayMs: number; failure: AttemptFailure }): void;
  /** The backend was found unreachable: new attempts wait `pauseMs`. */
  paused(e: { pauseMs: number; failure: AttemptFailure }): void;
  /** +1 when an attempt starts, -1 when it ends: what is running now. */
  running(delta: number): void;
  /** A message from the CLI itself (e.g. "stopping"). */
  notice(text: string): void;
  stop(): void;
}

/** The live display on a terminal, plain lines anywhere else. */
export function createDisplay(out: Writable & { isTTY?: boolean; columns?: number }, total: number): RunDisplay {
  return out.isTTY ? new LiveDisplay(out, total) : new PlainDisplay(out, total);
}

export function attachDisplay(events: TypedEvents<RunEvents>, display: RunDisplay): void {
  events.on('run:progress', (p) => display.progress(p));
  events.on('task:settled', (r) => display.settled(r));
  events.on('retry:scheduled', (e) => display.retry(e));
  // run:progress comes when tasks settle; attempts running are counted as they start and end.
  events.on('run:paused', (e) => display.paused(e));
  events.on('attempt:start', () => display.running(1));
  events.on('attempt:end', () => display.running(-1));
}
