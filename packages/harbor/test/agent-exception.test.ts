// An agent that times out (or a command agent that exits non-zero) on the real Docker engine, as
// harbor runs it (SingleStepTrial._run_agent at harbor 39b85872): the agent is stopped, the
// exception recorded, and the attempt goes on to collect, artifacts and the verifier, whose reward
// counts. A verifier that then fails is the verifier's task failure, never retried.
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createDockerBackend } from '@berth/backend-docker';
import { runHarborJob, type AttemptResultFile, type HarborJobReport } from '@berth/harbor';
import { taskToml, tempDir, writeTask } from './support.js';

const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

// A 2 s agent timeout, and a collect command that leaves a mark once the agent is done.
const TOML = taskToml()
  .replace('[agent]\ntimeout_sec = 60.0', '[agent]\ntimeout_sec = 2')
  .concat('\n[[verifier.collect]]\ncommand = "echo collected > /logs/artifacts/after-agent.txt"\n');

// One command for every task (the agent is the job's): what it does depends on the task.
const AGENT = `case "$BERTH_TASK_ID" in
  solved-then-sleeps) mkdir -p /app && echo solved > /app/done; echo working; sleep 30 ;;
  sleeps) sleep 30 ;;
  solved-then-fails) mkdir -p /app && echo solved > /app/done; echo "no API key" >&2; exit 3 ;;
  sleeps-no-reward) sleep 30 ;;
esac`;

describe('an agent that ends badly is verified anyway, as harbor does (Docker)', () => {
  it('scores what the sandbox holds, records the timeout or the exit, and never retries a task failure', { timeout: 180_000 }, async () => {
    const base = await tempDir('agent-exception');
    dirs.push(base);
    const root = join(base, 'tasks');
    for (const id of ['solved-then-sleeps', 'sleeps', 'solved-then-fails']) await writeTask(root, id, { toml: TOML, solve: null });
    await writeTask(root, 'sleeps-no-reward', { toml: TOML, solve: null, test: '#!/bin/sh\necho "nothing to grade" >&2\nexit 1\n' });
    const jobDir = join(base, 'job');

    const started = performance.now();
    const result = await runHarborJob({ tasksDir: root, backend: createDockerBackend(), jobDir, agent: { command: AGENT }, maxAttempts: 3, concurrency: 2 });
    // Cut at 2 s, not run for 30: every sleeping agent was stopped at its timeout.
    expect(performance.now() - started).toBeLessThan(60_000);
    const attempt = (id: string) => join(jobDir, id, 'attempt-1');
    const resultOf = async (id: string) => JSON.parse(await readFile(join(attempt(id), 'result.json'), 'utf8')) as AttemptResultFile;
    const report = JSON.parse(await readFile(join(jobDir, 'report.json'), 'utf8')) as HarborJobReport;
    const summary = (id: string) => report.tasks.find((t) => t.taskId === id)!;
    const record = (id: string) => result.tasks.find((t) => t.taskId === id)!;
    const timedOut = { exceptionType: 'AgentTimeoutError', exceptionMessage: 'the agent command did not finish within 2 s' };

    // A correct answer, then past its timeout: 1, and recorded as timed out.
    expect(record('solved-then-sleeps')).toMatchObject({ status: 'scored', outcome: { reward: 1, exceptionInfo: timedOut } });
    expect(summary('solved-then-sleeps')).toMatchObject({ status: 'rewarded', reward: 1, exceptionInfo: timedOut });
    const solved = await resultOf('solved-then-sleeps');
    expect(solved).toMatchObject({ outcome: { reward: 1 }, exceptionInfo: timedOut });
    expect(solved.failure).toBeUndefined();
    const steps = solved.steps.map((s) => s.name);
    expect(steps.slice(steps.indexOf('agent'))).toEqual([
      'agent',
      'download agent logs',
      'collect 1',
      'artifacts',
      'upload tests',
      'verifier',
      'download verifier logs',
      'teardown',
    ]);
    expect(solved.steps.find((s) => s.name === 'agent')).toMatchObject({ ended: 'timed_out', timedOut: true });
    // Its logs kept, the collect command run after it, the artifacts copied out.
    expect(await readFile(join(attempt('solved-then-sleeps'), 'agent', 'stdout.txt'), 'utf8')).toBe('working\n');
    expect(await readFile(join(attempt('solved-then-sleeps'), 'agent', 'instruction.md'), 'utf8')).toBe('');
    expect(await readFile(join(attempt('solved-then-sleeps'), 'artifacts', 'after-agent.txt'), 'utf8')).toBe('collected\n');
    expect(await readFile(join(attempt('solved-then-sleeps'), 'verifier', 'test-stdout.txt'), 'utf8')).toBe('PASS\n');

    // Nothing written, then past its timeout: 0, also recorded as timed out.
    expect(record('sleeps')).toMatchObject({ status: 'scored', outcome: { reward: 0, exceptionInfo: timedOut } });
    expect(await resultOf('sleeps')).toMatchObject({ outcome: { reward: 0 }, exceptionInfo: timedOut });

    // A command agent that exits non-zero: harbor's NonZeroAgentExitCodeError, and the reward counts.
    const nonZero = { exceptionType: 'NonZeroAgentExitCodeError', exceptionMessage: 'the agent command exited 3; stderr: no API key' };
    expect(record('solved-then-fails')).toMatchObject({ status: 'scored', outcome: { reward: 1, exceptionInfo: nonZero } });
    expect((await resultOf('solved-then-fails')).steps.find((s) => s.name === 'agent')).toMatchObject({ ended: 'completed', exitCode: 3 });

    // The verifier then wrote no reward: its failure, the agent's timeout beside it and in its message.
    const failed = record('sleeps-no-reward');
    expect(failed).toMatchObject({ status: 'scored', failure: { category: 'task_failure', type: 'RewardFileMissing' } });
    expect(failed.failure?.message).toMatch(
      /exited 1; stderr: nothing to grade.*after the agent's AgentTimeoutError: the agent command did not finish within 2 s/,
    );
    expect(failed.attempts).toHaveLength(1);
    expect(summary('sleeps-no-reward')).toMatchObject({ status: 'task_failed', failureType: 'RewardFileMissing' });
    expect(summary('sleeps-no-reward').exceptionInfo).toBeUndefined();
    const missing = await resultOf('sleeps-no-reward');
    expect(missing).toMatchObject({ failure: { type: 'RewardFileMissing' }, exceptionInfo: timedOut });
    expect(missing.outcome).toBeUndefined();

    // Every task was verified once: nothing here is the infrastructure's.
    expect(result.report).toMatchObject({ total: 4, scored: 4, taskFailures: 1, attempts: 4, retries: 0 });
  });
});
