import type { Writable } from 'node:stream';
import type { RunEvents, TypedEvents } from '@berth/core';
import { LiveDisplay } from './live-display.js';
import { PlainDisplay } from './plain-display.js';
import type { RunDisplay } from './display.js';

export type { RunDisplay };

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
