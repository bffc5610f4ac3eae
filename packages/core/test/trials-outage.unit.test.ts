import { describe, expect, it } from 'vitest';
import { BackendUnavailableError, VirtualClock, createEvents, runTrials, type RunEvents } from '../src/index.js';

/**
 * 60 tasks on a backend that is unreachable from 1 s to 6 s of (virtual) time, e.g. an engine
 * restart: an attempt that starts then fails at once; one that starts outside it takes 500 ms.
 */
function outageRun(outagePause: false | undefined) {
  const clock = new VirtualClock();
  const events = createEvents<RunEvents>();
  const pauses: number[] = [];
  events.on('run:paused', (e) => pauses.push(e.pauseMs));
  const down = (t: number) => t >= 1000 && t < 6000;
  const tasks = Array.from({ length: 60 }, (_, i) => `t${i}`);
  const run = runTrials(
    tasks,
    async () => {
      if (down(clock.now())) throw new BackendUnavailableError({ operation: 'start', backend: 'fake', message: 'the engine is unreachable (ECONNREFUSED)' });
      await clock.sleep(500);
      return { reward: 1 };
    },
    { clock, events, concurrency: 8, maxAttempts: 3, random: () => 0, ...(outagePause === false ? { outagePause } : {}) },
  );
  return { run, pauses };
}

describe('runTrials during a backend outage', () => {
  it('without the pause, every task burns its attempts in the seconds the backend is down', async () => {
    const { run } = outageRun(false);
    const { report } = await run;
    expect(report.infraFailed.total).toBeGreaterThan(30);
    expect(report.valid).toBe(false);
  });

  it('holds new attempts back while the backend is unreachable, so the run survives it', async () => {
    const { run, pauses } = outageRun(undefined);
    const { report } = await run;
    expect(report).toMatchObject({ total: 60, scored: 60, valid: true });
    // Only the attempts that found the backend down in each probe failed: a handful, not hundreds.
    expect(report.byType.BackendUnavailableError).toBeLessThanOrEqual(8 * pauses.length);
    expect(report.byType.BackendUnavailableError).toBeLessThan(30);
    // The pause doubles while the outage lasts: 1 s, 2 s, 4 s.
    expect(pauses).toEqual([1000, 2000, 4000]);
  });

  it('refuses a negative pause', async () => {
    await expect(runTrials(['a'], async () => ({ reward: 1 }), { outagePause: { initialMs: -1 } })).rejects.toThrow(
      /outagePause.initialMs must be a number of milliseconds >= 0, got -1/,
    );
  });
});
