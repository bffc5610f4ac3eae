import { setImmediate as yieldToLoop } from 'node:timers/promises';

/** How long synchronous file work may hold the event loop before letting I/O run. */
const SLICE_MS = 8;

/**
 * Small files are read and written with synchronous calls: for a 1 KiB file, a round trip through
 * libuv's thread pool costs more than the work (10,000 files: ~0.3 s synchronous against ~2-3 s
 * through the pool, measured). To keep the process responsive, the synchronous work runs in
 * slices and yields to the event loop between them.
 */
export class TimeSlice {
  #started = performance.now();

  /** Yield if this slice has run long enough. */
  async pause(): Promise<void> {
    if (performance.now() - this.#started < SLICE_MS) return;
    await yieldToLoop();
    this.#started = performance.now();
  }
}
