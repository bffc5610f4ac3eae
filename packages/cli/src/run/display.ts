import type { AttemptFailure, RunProgress, TaskRecord } from '@berth/core';

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
