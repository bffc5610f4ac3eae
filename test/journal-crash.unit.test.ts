// SIGKILL a real run mid-way, resume it from its journal, and compare with a run never killed.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { RunResult } from '@berth/core';

const child = join(import.meta.dirname, 'support/journal-child.mjs');
const dirs: string[] = [];
afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

function run(args: string[]): { pid: number; done: Promise<number | null> } {
  const proc = spawn(process.execPath, [child, ...args], { stdio: ['ignore', 'ignore', 'inherit'] });
  return { pid: proc.pid!, done: new Promise((resolve) => proc.on('exit', (code, signal) => resolve(signal ? null : code))) };
}

async function settledLines(path: string): Promise<string[]> {
  if (!existsSync(path)) return [];
  // The victim may be mid-write: only newline-terminated lines are written (the journal's own
  // reader drops a torn tail the same way).
  return (await readFile(path, 'utf8'))
    .split('\n')
    .slice(0, -1)
    .filter((l) => l.includes('"type":"attempt"'))
    .map((l) => {
      const r = (JSON.parse(l) as { record: { taskId: string; attempt: number } }).record;
      return `${r.taskId}#${r.attempt}`;
    });
}

const comparable = (r: RunResult) => ({
  report: { ...r.report, durationMs: 0 },
  tasks: r.tasks.map((t) => ({
    id: t.taskId,
    status: t.status,
    chosen: t.chosenAttempt,
    outcome: t.outcome,
    failure: t.failure?.type,
    attempts: t.attempts.map((a) => [a.attempt, a.status, a.failure?.type]),
  })),
});

describe('journal across a SIGKILL', () => {
  it('resumes to the same report as an uninterrupted run, running no settled attempt twice', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'berth-crash-'));
    dirs.push(dir);
    // The uninterrupted reference.
    const ref = run([join(dir, 'ref.jsonl'), join(dir, 'ref.ran'), join(dir, 'ref.json')]);
    expect(await ref.done).toBe(0);
    const reference = JSON.parse(await readFile(join(dir, 'ref.json'), 'utf8')) as RunResult;

    // The victim: killed once a third of its attempts are journaled.
    const journal = join(dir, 'run.jsonl');
    const victim = run([journal, join(dir, 'first.ran'), join(dir, 'first.json'), '5']);
    for (let i = 0; i < 2000; i++) {
      if ((await settledLines(journal)).length >= reference.report.attempts / 3) break;
      await new Promise((r) => setTimeout(r, 5));
    }
    process.kill(victim.pid, 'SIGKILL');
    expect(await victim.done).toBeNull();
    expect(existsSync(join(dir, 'first.json'))).toBe(false);
    const settledAtKill = new Set(await settledLines(journal));
    expect(settledAtKill.size).toBeGreaterThan(0);
    expect(settledAtKill.size).toBeLessThan(reference.report.attempts);

    // The resume.
    const resume = run([journal, join(dir, 'second.ran'), join(dir, 'second.json')]);
    expect(await resume.done).toBe(0);
    const resumed = JSON.parse(await readFile(join(dir, 'second.json'), 'utf8')) as RunResult;
    expect(comparable(resumed)).toEqual(comparable(reference));
    expect(resumed.resume?.reusedAttempts).toBe(settledAtKill.size);

    // Nothing the journal had settled ran again; all that ran after the kill was new.
    const ranAfter = (await readFile(join(dir, 'second.ran'), 'utf8')).split('\n').filter(Boolean);
    for (const attempt of ranAfter) expect(settledAtKill.has(attempt)).toBe(false);
    expect(new Set(ranAfter).size).toBe(ranAfter.length);
    expect(settledAtKill.size + ranAfter.length).toBe(reference.report.attempts);
  });
});
