import type { Writable } from 'node:stream';
import type { AttemptFailure, RunProgress, TaskRecord } from '@berth/core';
import { formatDuration } from '../duration.js';
import { clip, describeFailure } from './settled-line.js';
import type { RunDisplay } from './display.js';

const RECENT_FAILURES = 5;
const REDRAW_MS = 250;
const BAR_WIDTH = 30;

interface RecentFailure {
  taskId: string;
  attempt: number;
  text: string;
  retried: boolean;
}

/**
 * Parts joined two spaces apart, as many to a line as fit in `width`: a narrow terminal gets more
 * lines, never a count cut out of the middle of one. (Only a single part wider than the line is clipped.)
 */
export function fitWords(parts: readonly string[], width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const part of parts) {
    if (line !== '' && line.length + 2 + part.length > width) {
      lines.push(line);
      line = part;
    } else line = line === '' ? part : `${line}  ${part}`;
  }
  if (line !== '') lines.push(line);
  return lines.map((l) => clip(l, width));
}

/**
 * On a terminal: a block redrawn in place — a progress bar with scored / infra-failed / not run /
 * retries / running / ETA, and the last few failures with their type.
 */
export class LiveDisplay implements RunDisplay {
  readonly #out: Writable & { columns?: number };
  readonly #started = performance.now();
  readonly #timer: NodeJS.Timeout;
  #progress: RunProgress = { total: 0, settled: 0, scored: 0, infraFailed: 0, notRun: 0, running: 0, attempts: 0 };
  #retries = 0;
  #failures: RecentFailure[] = [];
  #notice = '';
  #running = 0;
  #pausedUntil = 0;
  #pauseReason = '';
  #drawn = 0;

  constructor(out: Writable & { columns?: number }, total: number) {
    this.#out = out;
    this.#progress = { ...this.#progress, total };
    this.#timer = setInterval(() => this.#draw(), REDRAW_MS);
    this.#timer.unref();
  }

  progress(progress: RunProgress): void {
    this.#progress = progress;
  }

  settled(record: TaskRecord): void {
    // Failures only: a clean score is in the bar, a task the run stopped is in "not run".
    if ((record.status === 'scored' && !record.failure) || record.status === 'not_run') return;
    const failure = record.failure;
    this.#remember({
      taskId: record.taskId,
      attempt: record.attempts.at(-1)?.attempt ?? 0,
      text: failure ? describeFailure(failure) : record.status,
      retried: false,
    });
  }

  retry(e: { taskId: string; attempt: number; delayMs: number; failure: AttemptFailure }): void {
    this.#retries++;
    this.#remember({ taskId: e.taskId, attempt: e.attempt - 1, text: describeFailure(e.failure), retried: true });
  }

  paused(e: { pauseMs: number; failure: AttemptFailure }): void {
    this.#pausedUntil = performance.now() + e.pauseMs;
    this.#pauseReason = describeFailure(e.failure);
  }

  running(delta: number): void {
    this.#running += delta;
  }

  notice(text: string): void {
    this.#notice = text;
    this.#draw();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#draw();
  }

  #remember(failure: RecentFailure): void {
    this.#failures.push(failure);
    if (this.#failures.length > RECENT_FAILURES) this.#failures.shift();
  }

  #eta(): string {
    const { settled, total } = this.#progress;
    if (settled === 0 || settled >= total) return '-';
    const elapsed = performance.now() - this.#started;
    return formatDuration((elapsed / settled) * (total - settled));
  }

  #lines(): string[] {
    const p = this.#progress;
    // A pty whose size nobody set says 0 columns.
    const width = Math.max(40, (this.#out.columns || 100) - 1);
    const done = p.total === 0 ? 0 : Math.round((p.settled / p.total) * BAR_WIDTH);
    const bar = `[${'#'.repeat(done)}${'-'.repeat(BAR_WIDTH - done)}] ${p.settled}/${p.total}`;
    const counts = [
      `scored ${p.scored}`,
      `infra-failed ${p.infraFailed}`,
      `not run ${p.notRun}`,
      `retries ${this.#retries}`,
      `running ${this.#running}`,
      `ETA ${this.#eta()}`,
      `elapsed ${formatDuration(performance.now() - this.#started)}`,
    ];
    const lines = fitWords([bar, ...counts], width);
    if (this.#failures.length > 0) {
      lines.push('last failures:');
      for (const f of this.#failures) lines.push(clip(`  ${f.taskId} #${f.attempt}${f.retried ? ' (retrying)' : ''}  ${f.text}`, width));
    }
    const pause = this.#pausedUntil - performance.now();
    if (pause > 0) lines.push(clip(`backend unreachable: new attempts wait ${formatDuration(pause)} (${this.#pauseReason})`, width));
    if (this.#notice) lines.push(clip(this.#notice, width));
    return lines;
  }

  #draw(): void {
    const lines = this.#lines();
    // Back to the top of the block drawn last time, clear it, draw again.
    const up = this.#drawn > 0 ? `\x1b[${this.#drawn}F` : '';
    this.#out.write(`${up}\x1b[J${lines.join('\n')}\n`);
    this.#drawn = lines.length;
  }
}
