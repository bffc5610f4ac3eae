import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HarborJobReport } from '@berth/harbor';
import { berth, collect, spawnBerth, spawnInPty, waitForOutput } from './support/berth-bin.js';
import { writeDataset } from './support/dataset.js';
import { containersLabelled } from './support/docker-state.js';

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'berth-cli-interrupt-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

interface JournalAttempt {
  type: string;
  record?: { taskId: string; attempt: number; startedAt: number };
}

async function journalAttempts(jobDir: string): Promise<Array<{ taskId: string; attempt: number; startedAt: number }>> {
  const text = await readFile(join(jobDir, 'journal.jsonl'), 'utf8').catch(() => '');
  // The run may be mid-write: only newline-terminated lines are written.
  return text
    .split('\n')
    .slice(0, -1)
    .map((l) => JSON.parse(l) as JournalAttempt)
    .filter((l) => l.type === 'attempt')
    .map((l) => l.record!);
}

async function report(jobDir: string): Promise<HarborJobReport> {
  return JSON.parse(await readFile(join(jobDir, 'report.json'), 'utf8')) as HarborJobReport;
}

/** Tasks that take a few seconds each, so a run can be interrupted in the middle. */
async function slowDataset(name: string, count: number, sleepSec: number): Promise<string> {
  return writeDataset(
    join(root, name),
    Array.from({ length: count }, (_, i) => ({ id: `${name}-${i}`, kind: 'slow' as const, sleepSec })),
  );
}

const taskLabel = (id: string) => `berth.task=${id}`;
async function leftovers(prefix: string, count: number): Promise<string[]> {
  const all = await Promise.all(Array.from({ length: count }, (_, i) => containersLabelled(taskLabel(`${prefix}-${i}`))));
  return all.flat();
}

/** Polls until the engine holds `want` sandboxes of the dataset; throws with what it saw if they never come. */
async function untilSandboxes(prefix: string, count: number, want: number, timeoutMs = 30_000): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const seen = await leftovers(prefix, count);
    if (seen.length >= want) return seen;
    if (Date.now() > deadline) throw new Error(`${want} sandbox(es) of ${prefix} never ran at once (saw ${seen.length} after ${timeoutMs} ms)`);
    await sleep(100);
  }
}

describe('berth run, interrupted', () => {
  it('after kill -9 mid-run: sweep removes what it left, and the same command resumes without rerunning a settled attempt', async () => {
    const tasks = await slowDataset('killed', 8, 3);
    const jobDir = join(root, 'killed-job');
    const args = ['run', tasks, '--job-dir', jobDir, '--concurrency', '2'];
    // Without the guardian, which would remove the killed run's sandboxes itself: this is sweep's case.
    const child = spawnBerth(args, { env: { BERTH_GUARDIAN: '0' } });
    const done = collect(child);
    // Wait for two settled attempts, with two more running.
    for (let i = 0; i < 600 && (await journalAttempts(jobDir)).length < 2; i++) await sleep(100);
    await sleep(1500);
    child.kill('SIGKILL');
    const killed = await done;
    expect(killed.signal).toBe('SIGKILL');
    const settledBefore = await journalAttempts(jobDir);
    expect(settledBefore.length).toBeGreaterThanOrEqual(2);
    expect(settledBefore.length).toBeLessThan(8);

    // The dead process's sandboxes are still there; sweep lists them, then removes them.
    const orphans = await leftovers('killed', 8);
    expect(orphans.length).toBeGreaterThan(0);
    const dry = await berth(['sweep', '--dry-run', '--json']);
    expect(dry.code, dry.stderr).toBe(0);
    const listed = JSON.parse(dry.stdout) as { dryRun: boolean; wouldRemove: string[]; removed: string[] };
    expect(listed.dryRun).toBe(true);
    expect(listed.removed).toEqual([]);
    expect(listed.wouldRemove.length).toBeGreaterThanOrEqual(orphans.length);
    expect(await leftovers('killed', 8)).toHaveLength(orphans.length);
    const swept = await berth(['sweep']);
    expect(swept.code, swept.stdout + swept.stderr).toBe(0);
    expect(swept.stdout).toMatch(/removed \d+ orphaned sandbox resource/);
    expect(await leftovers('killed', 8)).toEqual([]);

    const resumed = await berth(args);
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(new RegExp(`resumed: ${settledBefore.length} attempt\\(s\\) reused from the journal`));
    const after = await journalAttempts(jobDir);
    // Every attempt settled before the kill is still the only one of its task: nothing ran twice.
    for (const a of settledBefore) {
      expect(after.filter((b) => b.taskId === a.taskId)).toEqual([a]);
    }
    const final = await report(jobDir);
    expect(final.report).toMatchObject({ total: 8, scored: 8, valid: true });
    expect(final.resume?.reusedAttempts).toBe(settledBefore.length);
    expect(await leftovers('killed', 8)).toEqual([]);
  }, 240_000);

  it('Ctrl-C once through a real terminal: running attempts stop, their sandboxes go, the report says not_run, exit 1; the same command then finishes it', async () => {
    const tasks = await slowDataset('ctrlc', 4, 8);
    const jobDir = join(root, 'ctrlc-job');
    const args = ['run', tasks, '--job-dir', jobDir, '--concurrency', '4'];
    const child = spawnInPty(args);
    const done = collect(child, { timeoutMs: 120_000, keepStdin: true });
    // The live display (a TTY) shows four running.
    await waitForOutput(child, /running 4/);
    // Their sandboxes are there before Ctrl-C (so "they go" below is seen to happen).
    expect(await untilSandboxes('ctrlc', 4, 4)).toHaveLength(4);
    child.stdin!.write('\x03');
    const result = await done;
    expect(result.stdout).toContain('stopping');
    expect(result.stdout).toMatch(/\x1b\[\d+F/); // the live display redraws in place
    expect(result.code).toBe(1);
    expect(result.stdout, result.stdout.slice(-1500)).toMatch(/stopped: 4 task\(s\) not run; run the same command again to resume/);
    const stopped = await report(jobDir);
    expect(stopped.report.notRun).toEqual({ total: 4, deadline: 0, cancelled: 4 });
    expect(stopped.tasks.every((t) => t.status === 'not_run' && t.notRunReason === 'cancelled')).toBe(true);
    expect(await leftovers('ctrlc', 4)).toEqual([]);

    // The journal is consistent: the same command runs the stopped tasks again (attempt 2; a re-run
    // of an attempt the run itself stopped is not a retry) and the run is valid.
    const resumed = await berth(args);
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
    const final = await report(jobDir);
    expect(final.report).toMatchObject({ total: 4, scored: 4, retries: 0, attempts: 8, valid: true });
    expect(final.tasks.map((t) => t.chosenAttempt)).toEqual([2, 2, 2, 2]);
  }, 180_000);

  it('Ctrl-C twice exits at once (130); berth sweep then leaves nothing', async () => {
    const tasks = await slowDataset('twice', 4, 30);
    const jobDir = join(root, 'twice-job');
    const child = spawnInPty(['run', tasks, '--job-dir', jobDir, '--concurrency', '2']);
    const done = collect(child, { timeoutMs: 120_000, keepStdin: true });
    await waitForOutput(child, /running 2/);
    expect(await untilSandboxes('twice', 4, 2)).toHaveLength(2);
    child.stdin!.write('\x03');
    await waitForOutput(child, /stopping/);
    child.stdin!.write('\x03');
    const result = await done;
    expect(result.code).toBe(130);
    expect(result.stdout).toContain('exiting now');
    const swept = await berth(['sweep']);
    expect(swept.code, swept.stdout + swept.stderr).toBe(0);
    expect(await leftovers('twice', 4)).toEqual([]);
  }, 180_000);
});
