import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HarborJobReport } from '@berth/harbor';
import { berth } from './support/berth-bin.js';
import { writeDataset } from './support/dataset.js';

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'berth-cli-run-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function readReport(jobDir: string): Promise<HarborJobReport> {
  return JSON.parse(await readFile(join(jobDir, 'report.json'), 'utf8')) as HarborJobReport;
}

describe('berth run (the built binary, off a TTY)', () => {
  it('runs a dataset: one plain line per settled task, exit 1 with the reasons when the run is invalid, and the same command resumes without rerunning', async () => {
    const tasks = await writeDataset(join(root, 'mixed'), [
      { id: 'pass-a', kind: 'pass' },
      { id: 'pass-b', kind: 'pass' },
      { id: 'fails', kind: 'fail' },
      { id: 'no-reward', kind: 'no-reward' },
      { id: 'private', kind: 'private' },
    ]);
    const jobDir = join(root, 'mixed-job');
    const env = { DOCKER_CONFIG: join(root, 'no-docker-config') };
    const first = await berth(['run', tasks, '--job-dir', jobDir, '--concurrency', '3', '--attempts', '2'], { env });
    expect(first.code, first.stderr + first.stdout).toBe(1);
    const settledLines = first.stdout.split('\n').filter((l) => /^\[\s*\d+\/5\] /.test(l));
    expect(settledLines).toHaveLength(5);
    expect(first.stdout).toMatch(/pass-a {2}rewarded 1/);
    expect(first.stdout).toMatch(/no-reward {2}task_failed \(RewardFileMissing\)/);
    expect(first.stdout).toMatch(/private {2}infra_failed: permanent_infra ImagePullError/);
    // The fix, in the CLI's words and not cut off: the library's own hint is "pass spec.image.auth".
    expect(first.stdout).toMatch(/private {2}infra_failed: .*log in with docker login/);
    expect(first.stdout).not.toContain('spec.image.auth');
    expect(first.stdout).toContain('valid: NO');
    expect(first.stdout).toMatch(/1 task\(s\) failed on permanent infrastructure \(ImagePullError\)/);
    // No ANSI cursor movement off a terminal.
    expect(first.stdout).not.toContain('\x1b[');

    const report = await readReport(jobDir);
    expect(report.report).toMatchObject({ total: 5, scored: 4, taskFailures: 1, valid: false });
    expect(report.report.infraFailed.permanent).toBe(1);
    // A container per attempt but the private one's (its pull failed first), each removed; nothing to say at the end.
    expect(report.report.sandboxes).toEqual({ created: 4, removed: 4, notRemoved: [] });
    expect(first.stdout).not.toContain('NOT removed');
    const before = (await stat(join(jobDir, 'pass-a', 'attempt-1', 'result.json'))).mtimeMs;

    const again = await berth(['run', tasks, '--job-dir', jobDir, '--concurrency', '3', '--attempts', '2', '--json'], { env });
    expect(again.code, again.stderr).toBe(1);
    const data = JSON.parse(again.stdout) as { report: HarborJobReport['report']; resume: { reusedAttempts: number; interruptedAttempts: number } };
    expect(data.resume.reusedAttempts).toBe(report.report.attempts);
    expect(data.report.attempts).toBe(report.report.attempts);
    // The resume ran nothing, and its report still counts the first session's sandboxes: cumulative.
    expect(data.report.sandboxes).toEqual(report.report.sandboxes);
    expect((await stat(join(jobDir, 'pass-a', 'attempt-1', 'result.json'))).mtimeMs).toBe(before);
    expect(await readdir(join(jobDir, 'pass-a'))).toEqual(['attempt-1']);
  });

  it('exits 0 on a valid run, honours --filter, and defaults the job dir to ./berth-jobs/<name>', async () => {
    const tasks = await writeDataset(join(root, 'good'), [
      { id: 'alpha-1', kind: 'pass' },
      { id: 'alpha-2', kind: 'pass' },
      { id: 'beta-1', kind: 'private' },
    ]);
    const result = await berth(['run', tasks, '--filter', 'alpha-*'], { cwd: root });
    expect(result.code, result.stderr + result.stdout).toBe(0);
    expect(result.stdout).toContain('valid: yes');
    const report = await readReport(join(root, 'berth-jobs', 'good'));
    expect(report.tasks.map((t) => t.taskId).sort()).toEqual(['alpha-1', 'alpha-2']);
    expect(report.tasksDir).toBe(tasks);
  });

  it("--agent: a shell command as the agent (the instruction on its stdin and in $BERTH_INSTRUCTION), its output kept, and 'none'", async () => {
    const tasks = await writeDataset(join(root, 'agents'), [{ id: 'needs-42', kind: 'pass' }]);
    const agent =
      'grep -q "Write 42" && grep -q "Write 42" "$BERTH_INSTRUCTION" && mkdir -p /app && echo 42 > /app/answer.txt && echo "thinking about 42" && echo "a warning" >&2 && echo step-1 > /logs/agent/trace.txt; exit 3';
    const jobDir = join(root, 'agent-job');
    const solved = await berth(['run', tasks, '--agent', agent, '--job-dir', jobDir, '--json']);
    expect(solved.code, solved.stderr).toBe(0);
    expect(JSON.parse(solved.stdout).report.score.mean).toBe(1);
    expect((await readReport(jobDir)).agent).toBe('command');
    // What the agent said and left is kept: its output, its exit code, and /logs/agent.
    const attempt = join(jobDir, 'needs-42', 'attempt-1');
    expect(await readFile(join(attempt, 'agent', 'stdout.txt'), 'utf8')).toBe('thinking about 42\n');
    expect(await readFile(join(attempt, 'agent', 'stderr.txt'), 'utf8')).toBe('a warning\n');
    expect(await readFile(join(attempt, 'agent', 'trace.txt'), 'utf8')).toBe('step-1\n');
    expect(await readFile(join(attempt, 'agent', 'instruction.md'), 'utf8')).toMatch(/Write 42/);
    const result = JSON.parse(await readFile(join(attempt, 'result.json'), 'utf8')) as {
      steps: Array<{ name: string; exitCode?: number }>;
      exceptionInfo?: { exceptionType: string; exceptionMessage: string };
    };
    expect(result.steps.find((step) => step.name === 'agent')?.exitCode).toBe(3);
    // Not a verdict, but recorded as harbor records an installed agent's non-zero exit, and reported.
    expect(result.exceptionInfo).toMatchObject({
      exceptionType: 'NonZeroAgentExitCodeError',
      exceptionMessage: 'the agent command exited 3; stderr: a warning',
    });
    const shown = await berth(['report', jobDir]);
    expect(shown.stdout).toMatch(/agent errors +1 +NonZeroAgentExitCodeError 1 · verified anyway, as harbor does/);
    expect(shown.stdout).toMatch(/needs-42 +rewarded +1 +1 +NonZeroAgentExitCodeError: the agent command exited 3; stderr: a warning/);

    // The same job dir with another agent would mix two runs: refused, with the way on.
    const mixed = await berth(['run', tasks, '--agent', 'none', '--job-dir', jobDir]);
    expect(mixed.code, mixed.stdout).toBe(2);
    expect(mixed.stderr).toMatch(
      /holds another run, which this command would mix with its own:\n {2}- --agent \(commands are compared by a hash of their text\): \("command sha256:[0-9a-f]{12}" there, "none" here\)/,
    );
    expect(mixed.stderr).toMatch(/Run the same command with --fresh to start over .* or give --job-dir <another dir>/);
    expect(mixed.stderr).not.toContain('thinking');
    const again = await berth(['run', tasks, '--agent', 'none', '--job-dir', jobDir, '--fresh', '--json']);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout).report.score.mean).toBe(0);
    expect(again.stderr).toMatch(/--fresh: the previous job is now .*agent-job\.replaced-/);
    expect((await readdir(root)).filter((n) => n.startsWith('agent-job.replaced-'))).toHaveLength(1);
  });

  it('--mirror rewrites image references before the pull; --deadline stops the run and reports the rest as not run', async () => {
    const tasks = await writeDataset(join(root, 'mirrored'), [
      { id: 'mirrored', kind: 'pass', image: 'registry.invalid/busybox:latest' },
      { id: 'slow-1', kind: 'slow', sleepSec: 60, image: 'registry.invalid/busybox:latest' },
      { id: 'slow-2', kind: 'slow', sleepSec: 60, image: 'registry.invalid/busybox:latest' },
    ]);
    // registry.invalid/ does not exist: only the mirror rule makes these images the local berth-test/busybox.
    const result = await berth([
      'run',
      tasks,
      '--mirror',
      'registry.invalid/=berth-test/',
      '--deadline',
      '8s',
      '--job-dir',
      join(root, 'mirror-job'),
      '--json',
    ]);
    expect(result.code, result.stderr).toBe(1);
    const data = JSON.parse(result.stdout) as { report: HarborJobReport['report'] };
    expect(data.report).toMatchObject({ scored: 1, notRun: { total: 2, deadline: 2, cancelled: 0 } });
    expect(data.report.invalidReasons.join(' ')).toMatch(/coverage 0.333 is under 0.95/);
  }, 120_000);

  it('--pool n starts trials from warm pools: the run is the same, and nothing the pools held is left', async () => {
    const tasks = await writeDataset(join(root, 'pooled'), [
      { id: 'pooled-a', kind: 'pass' },
      { id: 'pooled-b', kind: 'fail' },
    ]);
    const jobDir = join(root, 'pooled-job');
    const since = Math.floor(Date.now() / 1000) - 1;
    const result = await berth(['run', tasks, '--job-dir', jobDir, '--pool', '2', '--json']);
    expect(result.code, result.stderr).toBe(0);
    const report = await readReport(jobDir);
    expect(report.tasks.map((t) => [t.taskId, t.status])).toEqual([
      ['pooled-a', 'rewarded'],
      ['pooled-b', 'rewarded'],
    ]);
    expect(report.tasks.map((t) => t.reward)).toEqual([1, 0]);
    // Each trial's sandbox was claimed and removed; the pools started more than the trials used
    // (their idle ones), and those went with the job.
    expect(report.report.sandboxes).toMatchObject({ removed: report.report.sandboxes.created, notRemoved: [] });
    const events = execFileSync(
      'docker',
      [
        'events',
        '--since',
        String(since),
        '--until',
        String(Math.ceil(Date.now() / 1000) + 1),
        '--filter',
        'event=create',
        '--filter',
        `label=berth.session=${process.env.BERTH_SESSION}`,
        '--format',
        '{{.Actor.ID}}',
      ],
      { encoding: 'utf8' },
    );
    const created = events.split('\n').filter(Boolean);
    expect(created.length).toBeGreaterThan(report.report.sandboxes.created);
    const left = execFileSync('docker', ['ps', '-aq', '--no-trunc'], { encoding: 'utf8' }).split('\n');
    expect(created.filter((id) => left.includes(id))).toEqual([]);
  }, 120_000);

  it('--pool n is no bigger than the trials that can claim from it: one task, one attempt, one container', async () => {
    const tasks = await writeDataset(join(root, 'pooled-one'), [{ id: 'only', kind: 'pass' }]);
    const jobDir = join(root, 'pooled-one-job');
    const since = Math.floor(Date.now() / 1000) - 1;
    const result = await berth(['run', tasks, '--job-dir', jobDir, '--pool', '3', '--attempts', '1']);
    expect(result.code, result.stderr + result.stdout).toBe(0);
    expect(result.stdout).toContain('--pool 3: a task takes at most 1 attempt(s) (--attempts) and has a pool of its own, so each pool keeps 1');
    const events = execFileSync(
      'docker',
      [
        'events',
        '--since',
        String(since),
        '--until',
        String(Math.ceil(Date.now() / 1000) + 1),
        '--filter',
        'event=create',
        '--filter',
        `label=berth.session=${process.env.BERTH_SESSION}`,
        '--filter',
        `label=berth.task=only`,
        '--format',
        '{{.Actor.ID}}',
      ],
      { encoding: 'utf8' },
    );
    expect(events.split('\n').filter(Boolean)).toHaveLength(1);
    expect((await readReport(jobDir)).report.sandboxes).toMatchObject({ created: 1, removed: 1 });
  }, 120_000);

  it('exits 2 with a message that says what to fix on usage and configuration errors', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['run', join(root, 'missing-dir')], /does not exist/],
      [['run', join(root, 'good'), '--attempts', 'zero'], /--attempts: expected a whole number/],
      [['run', join(root, 'good'), '--deadline', 'soon'], /write it like 90s, 30m, 2h/],
      [['run', join(root, 'good'), '--pool', '0'], /--pool: expected a whole number of at least 1, got "0"/],
      [['run', join(root, 'good'), '--pool', '5000'], /--pool is at most 1000 sandboxes per task environment; got 5000/],
      [['run', join(root, 'good'), '--snapshot-setup', ' '], /--snapshot-setup: give the shell command that sets a task up/],
      [['run', join(root, 'good'), '--backend', 'lxc'], /unknown backend "lxc": choose one of docker, k8s, modal/],
      [['run', join(root, 'good'), '--filter', 'nothing-*'], /--filter nothing-\* matches none of the tasks in/],
      [['run', join(root, 'good'), '--mirror', 'nonsense'], /--mirror: .*from=to/],
      [['run'], /missing required argument 'tasks'/],
      [['frobnicate'], /unknown command 'frobnicate'/],
    ];
    for (const [args, message] of cases) {
      const result = await berth(args);
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toMatch(message);
    }
  });
});
