import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, RunMismatchError, runTrials, type RunTrialsOptions } from '../src/index.js';

// A resumed run must never mix results of two runs: everything that decides a result is part of
// the journal's identity, and a task whose content changed is run again.

interface Task {
  id: string;
  content: string;
}

const dirs: string[] = [];
afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));
async function journalPath(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'berth-identity-'));
  dirs.push(d);
  return join(d, 'journal.jsonl');
}

const tasks = (...contents: string[]): Task[] => contents.map((content, i) => ({ id: `t${i}`, content }));

/** Runs the tasks, recording which ones actually ran; the reward says which agent ran them. */
async function run(list: Task[], journal: string, options: Partial<RunTrialsOptions<Task>> = {}) {
  const ran: string[] = [];
  const agent = options.runIdentity?.agent ?? 'none';
  const result = await runTrials(
    list,
    async (task) => {
      ran.push(task.id);
      return { reward: agent === 'oracle' ? 1 : 0 };
    },
    { journal, taskVersion: (t) => t.content, ...options },
  );
  return { result, ran };
}

describe('the journal identity', () => {
  it('refuses a resume with another agent, backend or target, naming each change and how to start over', async () => {
    const path = await journalPath();
    const first = { agent: 'none', backend: 'docker', target: 'unix:///var/run/docker.sock' };
    await run(tasks('a', 'b', 'c'), path, { runIdentity: first });
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ ...first, agent: 'oracle' }, /agent \("none" there, "oracle" here\)/],
      [{ ...first, backend: 'k8s' }, /backend \("docker" there, "k8s" here\)/],
      [
        { ...first, target: 'https://10.0.0.1:6443 namespace evals' },
        /target \("unix:\/\/\/var\/run\/docker.sock" there, "https:\/\/10.0.0.1:6443 namespace evals" here\)/,
      ],
      [{ ...first, overrides: 'sha256:abc' }, /overrides \(not set there, "sha256:abc" here\)/],
    ];
    for (const [identity, words] of cases) {
      const refused = await run(tasks('a', 'b', 'c'), path, { runIdentity: identity }).catch((e: unknown) => e);
      expect(RunMismatchError.isInstance(refused) && refused instanceof RunMismatchError).toBe(true);
      expect(ConfigError.isInstance(refused)).toBe(true);
      const error = refused as RunMismatchError;
      expect(error.message).toMatch(words);
      expect(error.message).toMatch(/pass fresh: true to start over/);
      expect(error.changes).toHaveLength(1);
      expect(error.location).toBe(path);
    }
    // Nothing was run or reused by the refused resumes, and the same identity still resumes.
    const again = await run(tasks('a', 'b', 'c'), path, { runIdentity: first });
    expect(again.ran).toEqual([]);
    expect(again.result.resume).toEqual({ reusedAttempts: 3, interruptedAttempts: 0, changedTasks: [] });
  });

  it('names added and removed tasks', async () => {
    const path = await journalPath();
    await run(tasks('a', 'b'), path);
    const refused = await run(
      [
        { id: 't0', content: 'a' },
        { id: 'zz', content: 'q' },
      ],
      path,
    ).catch((e: unknown) => e as Error);
    expect((refused as Error).message).toMatch(/tasks \(2 tasks there, 2 here; new: zz; gone: t1\)/);
  });

  it('reruns a task whose content changed, never reusing its old result, and reuses the rest', async () => {
    const path = await journalPath();
    const before = await run(tasks('a', 'b', 'c'), path, { runIdentity: { agent: 'oracle' } });
    expect(before.result.report.score?.mean).toBe(1);
    // t1 edited (say solve.sh now fails): its old reward must not survive.
    const ran: string[] = [];
    const after = await runTrials(
      tasks('a', 'B', 'c'),
      async (task) => {
        ran.push(task.id);
        return { reward: task.content === 'B' ? 0 : 1 };
      },
      { journal: path, taskVersion: (t) => t.content, runIdentity: { agent: 'oracle' } },
    );
    expect(ran).toEqual(['t1']);
    expect(after.resume).toEqual({ reusedAttempts: 2, interruptedAttempts: 0, changedTasks: ['t1'] });
    expect(after.tasks.find((t) => t.taskId === 't1')).toMatchObject({ outcome: { reward: 0 }, chosenAttempt: 1, attempts: [{ attempt: 1 }] });
    // A third session reuses the new result: nothing changed since.
    const third = await run(tasks('a', 'B', 'c'), path, { runIdentity: { agent: 'oracle' } });
    expect(third.ran).toEqual([]);
    expect(third.result.resume).toEqual({ reusedAttempts: 3, interruptedAttempts: 0, changedTasks: [] });
    expect(third.result.tasks.find((t) => t.taskId === 't1')?.outcome).toEqual({ reward: 0 });
  });

  it('fresh: true starts over and keeps the old journal beside it', async () => {
    const path = await journalPath();
    await run(tasks('a', 'b'), path, { runIdentity: { agent: 'none' } });
    const old = await readFile(path, 'utf8');
    const over = await run(tasks('a', 'b'), path, { runIdentity: { agent: 'oracle' }, fresh: true });
    expect(over.ran).toEqual(['t0', 't1']);
    expect(over.result.resume).toEqual({ reusedAttempts: 0, interruptedAttempts: 0, changedTasks: [] });
    expect(over.result.report.score?.mean).toBe(1);
    const names = await readdir(join(path, '..'));
    const aside = names.filter((n) => n.startsWith('journal.jsonl.replaced-'));
    expect(aside).toHaveLength(1);
    expect(await readFile(join(path, '..', aside[0]!), 'utf8')).toBe(old);
  });

  it('a journal written by an earlier berth is refused with the way to start over', async () => {
    const path = await journalPath();
    await writeFile(
      path,
      `${JSON.stringify({ type: 'header', version: 1, fingerprint: 'x', taskCount: 1, maxAttempts: 3, scoreField: 'reward', createdAt: 0 })}\n`,
    );
    const refused = await run(tasks('a'), path).catch((e: unknown) => e as Error);
    expect(RunMismatchError.isInstance(refused)).toBe(true);
    expect((refused as Error).message).toMatch(/written by another berth \(version 1; this one writes 2\).*pass fresh: true/);
  });
});
