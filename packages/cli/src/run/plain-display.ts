import type { Writable } from 'node:stream';
import type { AttemptFailure, RunProgress, TaskRecord } from '@berth/core';
import { formatDuration } from '../duration.js';
import { describeFailure, settledLine } from './settled-line.js';
import type { RunDisplay } from './display.js';

/** Off a terminal (CI, a pipe, a log file): one line per settled task and per retry, nothing redrawn. */
export class PlainDisplay implements RunDisplay {
  readonly #out: Writable;
  readonly #total: number;
  #settled = 0;

  constructor(out: Writable, total: number) {
    this.#out = out;
    this.#total = total;
  }

  progress(_progress: RunProgress): void {}

  settled(record: TaskRecord): void {
    this.#settled++;
    this.#out.write(`${settledLine(record, { settled: this.#settled, total: this.#total })}\n`);
  }

  retry(e: { taskId: string; attempt: number; delayMs: number; failure: AttemptFailure }): void {
    this.#out.write(`retry ${e.taskId}: attempt ${e.attempt} in ${formatDuration(e.delayMs)} after ${describeFailure(e.failure)}\n`);
  }

  running(_delta: number): void {}

  paused(e: { pauseMs: number; failure: AttemptFailure }): void {
    this.#out.write(`backend unreachable: new attempts paused for ${formatDuration(e.pauseMs)} (${describeFailure(e.failure)})\n`);
  }

  notice(text: string): void {
    this.#out.write(`${text}\n`);
  }

  stop(): void {}
}
