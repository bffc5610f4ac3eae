// The retry controller's own overhead: 10,000 no-op trials with the journal on, against the
// standard tool for a bounded-concurrency run (p-map) writing the same one JSON line per trial.
//   npm run bench:trials        (BENCH_TRIALS, BENCH_REPS override the sizes)
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pMap from 'p-map';
import { runTrials } from '@berth/core';

const TRIALS = Number(process.env.BENCH_TRIALS ?? 10_000);
const REPS = Number(process.env.BENCH_REPS ?? 5);
const CONCURRENCY = 16;
const dir = mkdtempSync(join(tmpdir(), 'berth-bench-trials-'));
const tasks = Array.from({ length: TRIALS }, (_, i) => `task-${i}`);

async function peakRss(fn) {
  globalThis.gc?.();
  const base = process.memoryUsage().rss;
  let peak = base;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
  const t0 = performance.now();
  try {
    await fn();
  } finally {
    clearInterval(timer);
  }
  const ms = performance.now() - t0;
  peak = Math.max(peak, process.memoryUsage().rss);
  return { ms, peakMiB: (peak - base) / 1048576 };
}

async function berth(rep) {
  const result = await runTrials(tasks, async () => ({ reward: 1 }), {
    concurrency: CONCURRENCY,
    journal: join(dir, `berth-${rep}.jsonl`),
  });
  if (result.report.scored !== TRIALS) throw new Error('berth run did not score every trial');
}

async function standard(rep) {
  const fd = openSync(join(dir, `pmap-${rep}.jsonl`), 'a');
  try {
    await pMap(
      tasks,
      async (taskId) => {
        const t0 = Date.now();
        const outcome = { reward: 1 };
        writeSync(fd, `${JSON.stringify({ taskId, attempt: 1, startedAt: t0, endedAt: Date.now(), outcome })}\n`);
        return outcome;
      },
      { concurrency: CONCURRENCY },
    );
  } finally {
    closeSync(fd);
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
try {
  await berth('warm');
  await standard('warm');
  const b = [];
  const s = [];
  for (let i = 0; i < REPS; i++) {
    b.push(await peakRss(() => berth(i)));
    s.push(await peakRss(() => standard(i)));
  }
  const bm = median(b.map((x) => x.ms));
  const sm = median(s.map((x) => x.ms));
  console.log(`retry controller overhead: ${TRIALS} no-op trials, concurrency ${CONCURRENCY}, journal on, ${REPS} reps, node ${process.version}`);
  console.log('                                   median total   per trial    peak ΔRSS');
  console.log(
    `berth runTrials (journal)          ${bm.toFixed(1).padStart(9)} ms  ${((bm * 1000) / TRIALS).toFixed(1).padStart(7)} µs  ${Math.max(
      ...b.map((x) => x.peakMiB),
    )
      .toFixed(1)
      .padStart(7)} MiB`,
  );
  console.log(
    `p-map + one JSONL line per trial   ${sm.toFixed(1).padStart(9)} ms  ${((sm * 1000) / TRIALS).toFixed(1).padStart(7)} µs  ${Math.max(
      ...s.map((x) => x.peakMiB),
    )
      .toFixed(1)
      .padStart(7)} MiB`,
  );
  console.log(`ratio berth / p-map: ${(bm / sm).toFixed(2)}  (berth also journals attempt starts, classifies, emits events and builds the report)`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
