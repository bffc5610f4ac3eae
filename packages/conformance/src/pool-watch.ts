import type { EnvironmentPool } from '@berth/core';
import { expect, vi } from 'vitest';
import type { Harness } from './harness.js';

/**
 * The sandboxes the pooled run's warm pools hold idle, from their events (ready, less claimed or
 * removed); nothing in a run without pools. watch() picks up pools made since.
 */
export function poolWatch(h: Harness): { watch(): void; idle(): Set<string>; settled(ms: number): Promise<void> } {
  const watched = new Set<EnvironmentPool>();
  const idle = new Set<string>();
  const watch = () => {
    for (const pool of h.pools()) {
      if (watched.has(pool)) continue;
      watched.add(pool);
      pool.events.on('ready', (id) => idle.add(id));
      pool.events.on('claimed', (id) => idle.delete(id));
      pool.events.on('removed', (id) => idle.delete(id));
    }
  };
  watch();
  return {
    watch,
    idle: () => new Set(idle),
    // Until no pool has a start in flight: a refill's sandbox half made is neither idle nor gone.
    settled: (ms) => vi.waitFor(() => expect(h.pools().map((p) => p.stats.starting)).toEqual(h.pools().map(() => 0)), { timeout: ms, interval: 50 }),
  };
}
