// A run in its own process, for the crash test: a seeded mix of outcomes, task failures and
// transient infra failures, journaled. Every trial that finishes appends "taskId#attempt" to the
// log before returning, so the parent can tell what ran where.
//   node test/support/journal-child.mjs <journal> <ranLog> <reportOut> [slowMs]
import { appendFileSync, writeFileSync } from 'node:fs';
import { SandboxLostError, TaskFailure, runTrials } from '@berth/core';

const [journal, ranLog, reportOut, slowArg] = process.argv.slice(2);
const slowMs = Number(slowArg ?? 2);

function draw(taskId, attempt, salt) {
  let h = 2166136261 ^ (attempt * 0x9e3779b1) ^ salt;
  for (let i = 0; i < taskId.length; i++) h = Math.imul(h ^ taskId.charCodeAt(i), 0x01000193);
  h ^= h >>> 15;
  h = Math.imul(h, 0x2c1b3c6d);
  h ^= h >>> 12;
  return (h >>> 0) / 4294967296;
}

const tasks = Array.from({ length: 300 }, (_, i) => `task-${i}`);
const result = await runTrials(
  tasks,
  async (taskId, ctx) => {
    await new Promise((r) => setTimeout(r, slowMs));
    const u = draw(taskId, ctx.attempt, 1);
    appendFileSync(ranLog, `${taskId}#${ctx.attempt}\n`);
    if (u < 0.4) throw new SandboxLostError({ message: 'sandbox vanished', backend: 'sim' });
    if (u < 0.5) throw new TaskFailure({ message: 'no reward', kind: 'RewardFileMissing' });
    return { reward: draw(taskId, ctx.attempt, 2) < 0.5 ? 0 : 1 };
  },
  { journal, maxAttempts: 3, concurrency: 8, backoff: { initialMs: 1, maxMs: 5 } },
);
writeFileSync(reportOut, JSON.stringify(result));
