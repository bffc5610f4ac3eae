import type { Writable } from 'node:stream';
import type { AttemptFailure, EventEmitter, RunEvents, RunProgress, TaskRecord } from '@berth/core';
import { LiveDisplay } from './live-display.js';
import { PlainDisplay } from './plain-display.js';

/** What `berth run` shows while tasks run. */
export interface RunDisplay {
  progress(progress: RunProgress): void;
  settled(record: TaskRecord): void;
  retry(e: { taskId: string; attempt: number; delayMs: number; failure: AttemptFailure }): void;
  /** A message from the CLI itself (e.g. "stopping"). */
  notice(text: string): void;
  stop(): void;
}

/** The live display on a terminal, plain lines anywhere else. */
export function createDisplay(out: Writable & { isTTY?: boolean; columns?: number }, total: number): RunDisplay {
  return out.isTTY ? new LiveDisplay(out, total) : new PlainDisplay(out, total);
}

export function attachDisplay(events: EventEmitter<RunEvents>, display: RunDisplay): void {
  events.on('run:progress', (p) => display.progress(p));
  events.on('task:settled', (r) => display.settled(r));
  events.on('retry:scheduled', (e) => display.retry(e));
}
