// harbor's multi-step tasks end to end on Docker: harbor's own cookbook recipe (three steps,
// unchanged but for a Dockerfile on the local test image and no network) with the oracle, every step passing; the
// same recipe with no agent, stopped by the first step's min_reward; and a small task of berth's
// own for what the recipe does not use (a command agent given each step's instruction, a step's
// agent timeout, reward.json, a min_reward table, the "final" strategy).
import { chmod, cp, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createDockerBackend } from '@berth/backend-docker';
import { runHarborJob, type AttemptResultFile, type HarborJobReport } from '@berth/harbor';
import { BASIC_IMAGE, removeBuiltImages, tempDir } from './support.js';

const RECIPE = fileURLToPath(new URL('../../../test/fixtures/harbor-cookbook/multi-step/', import.meta.url));
const dirs: string[] = [];
const contexts: string[] = [];
afterAll(async () => {
  await removeBuiltImages(contexts);
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

/** The recipe's image, on the local test image: its WORKDIR, and a bash (sh underneath) for its #!/bin/bash scripts. */
const RECIPE_DOCKERFILE = `FROM ${BASIC_IMAGE}
RUN mkdir -p /app && printf '#!/bin/sh\\nexec sh "$@"\\n' > /bin/bash && chmod 755 /bin/bash
WORKDIR /app
`;

async function recipeJob(label: string) {
  const base = await tempDir(`multi-step-${label}`);
  dirs.push(base);
  const task = join(base, 'tasks', 'multi-step');
  await cp(RECIPE, task, { recursive: true });
  await writeFile(join(task, 'environment', 'Dockerfile'), RECIPE_DOCKERFILE);
  // The recipe's sandbox is public (allow_internet = true); offline here, as every test sandbox that sends nothing.
  const toml = await readFile(join(task, 'task.toml'), 'utf8');
  await writeFile(join(task, 'task.toml'), toml.replace('allow_internet = true', 'allow_internet = false'));
  contexts.push(join(task, 'environment'));
  const jobDir = join(base, 'job');
  const attempt = join(jobDir, 'multi-step', 'attempt-1');
  return {
    tasksDir: join(base, 'tasks'),
    jobDir,
    attempt,
    read: (file: string) => readFile(join(attempt, file), 'utf8'),
    result: async () => JSON.parse(await readFile(join(attempt, 'result.json'), 'utf8')) as AttemptResultFile,
  };
}

const exists = (path: string) =>
  stat(path).then(
    () => true,
    () => false,
  );

describe('multi-step tasks on Docker', () => {
  it("harbor's cookbook recipe with the oracle: each step in harbor's order, every one passing, the mean reward", { timeout: 240_000 }, async () => {
    const job = await recipeJob('oracle');
    const run = await runHarborJob({ tasksDir: job.tasksDir, backend: createDockerBackend(), jobDir: job.jobDir });
    const steps = [
      { name: 'scaffold', reward: 1 },
      { name: 'implement', reward: 1 },
      { name: 'document', reward: 1 },
    ];
    expect(run.tasks[0]).toMatchObject({ status: 'scored', outcome: { reward: 1, steps } });
    const report = JSON.parse(await readFile(join(job.jobDir, 'report.json'), 'utf8')) as HarborJobReport;
    expect(report.tasks[0]).toMatchObject({ status: 'rewarded', reward: 1, steps });

    const result = await job.result();
    expect(result.stepResults?.map((s) => [s.name, s.verifierResult, s.exceptionInfo, s.stoppedRun])).toEqual([
      ['scaffold', { reward: 1 }, undefined, undefined],
      ['implement', { reward: 1 }, undefined, undefined],
      ['document', { reward: 1 }, undefined, undefined],
    ]);
    // Each step's files under steps/<name>/: the oracle's output, the verifier's logs.
    for (const { name } of steps) {
      expect(await job.read(`steps/${name}/verifier/reward.txt`)).toBe('1\n');
      expect(await job.read(`steps/${name}/agent/stdout.txt`)).toBe(`${name} done\n`);
    }
    // implement: workdir/ uploaded and setup.sh run (it drops a marker in /logs/artifacts and removes itself),
    // then the step's healthcheck, before the agent; its verifier had the step's env and the merged tests
    // (the step's expected.txt and the task's helpers.sh), or it would not have scored 1.
    const implement = result.stepResults![1]!;
    expect(implement.setupExitCode).toBe(0);
    expect(await job.read('steps/implement/artifacts/setup-marker.txt')).toMatch(/^setup.sh ran at /);
    const names = result.steps.map((s) => s.name).filter((n) => n.startsWith('implement: '));
    expect(names.slice(0, 7)).toEqual([
      'implement: reset agent logs',
      'implement: upload workdir',
      'implement: setup',
      'implement: healthcheck',
      'implement: upload solution',
      'implement: agent',
      'implement: download agent logs',
    ]);
    expect(names).toContain('implement: upload tests');
    expect(names.indexOf('implement: artifacts')).toBeLessThan(names.indexOf('implement: verifier'));
    // Artifacts per step: the task's /app/greet.sh after each one (as it was then), the step's own README.md
    // in document only; what the verifier dropped in /logs/artifacts too, and only in its step's copy.
    expect(await job.read('steps/scaffold/artifacts/greet.sh')).toBe('#!/bin/bash\necho "hello"\n');
    expect(await job.read('steps/implement/artifacts/greet.sh')).toMatch(/Hello, \$\{name\}!/);
    expect(await job.read('steps/document/artifacts/README.md')).toMatch(/^# greet.sh/);
    expect(await exists(join(job.attempt, 'steps/scaffold/artifacts/README.md'))).toBe(false);
    expect(await exists(join(job.attempt, 'steps/scaffold/artifacts/setup-marker.txt'))).toBe(false);
    expect(await exists(join(job.attempt, 'steps/document/artifacts/setup-marker.txt'))).toBe(false);
    expect(result.stepResults![2]!.artifacts).toEqual(
      expect.arrayContaining([
        { source: '/app/greet.sh', destination: 'artifacts/greet.sh', status: 'copied' },
        { source: '/app/README.md', destination: 'artifacts/README.md', status: 'copied' },
      ]),
    );
    // What each step ran with, recorded beside the task's settings.
    expect(result.environment?.steps?.map((s) => [s.name, s.timeouts, s.verifierEnv, s.minReward])).toEqual([
      ['scaffold', { agentSec: 60, verifierSec: 30 }, [], 1],
      ['implement', { agentSec: 90, verifierSec: 30 }, ['EXPECTED_GREETING', 'EXPECTED_NAME'], 0.5],
      ['document', { agentSec: 60, verifierSec: 30 }, [], undefined],
    ]);
  });

  it('stops after a step whose reward misses its min_reward: with no agent, scaffold scores 0 and nothing else runs', { timeout: 180_000 }, async () => {
    const job = await recipeJob('none');
    const run = await runHarborJob({ tasksDir: job.tasksDir, backend: createDockerBackend(), jobDir: job.jobDir, agent: 'none' });
    expect(run.tasks[0]).toMatchObject({
      status: 'scored',
      outcome: {
        reward: 0,
        steps: [
          { name: 'scaffold', reward: 0 },
          { name: 'implement', skipped: true },
          { name: 'document', skipped: true },
        ],
      },
    });
    const result = await job.result();
    expect(result.stepResults).toHaveLength(1);
    expect(result.stepResults![0]).toMatchObject({
      name: 'scaffold',
      verifierResult: { reward: 0 },
      stoppedRun: 'step "scaffold": reward=0 below min_reward 1',
    });
    expect(result.steps.some((s) => s.name.startsWith('implement'))).toBe(false);
    expect(await exists(join(job.attempt, 'steps', 'implement'))).toBe(false);
  });

  it('gives a command agent each step\'s instruction and timeout; a step\'s timeout is recorded and verified past; "final" takes the last step', {
    timeout: 180_000,
  }, async () => {
    const base = await tempDir('multi-step-own');
    dirs.push(base);
    const task = join(base, 'tasks', 'own');
    const file = (path: string, text: string) => mkdir(join(task, path, '..'), { recursive: true }).then(() => writeFile(join(task, path), text));
    await file(
      'task.toml',
      `multi_step_reward_strategy = "final"
[agent]
timeout_sec = 60
[environment]
docker_image = "${BASIC_IMAGE}"
workdir = "/app"
network_mode = "no-network"
[[steps]]
name = "first"
min_reward = { style = 0.5 }
[[steps]]
name = "slow"
[steps.agent]
timeout_sec = 1
[steps.verifier.env]
WANT = "slow"
[[steps]]
name = "last"
`,
    );
    // Each step's verifier: did the agent see this step's instruction? (The task's tests/ brings the scorer.)
    await file(
      'tests/score.sh',
      'if [ "$(cat /app/$1.txt)" = "$1" ]; then echo "{\\"reward\\": $2, \\"style\\": 0.5}" > /logs/verifier/reward.json; else echo 0 > /logs/verifier/reward.txt; fi\n',
    );
    for (const [name, reward] of [
      ['first', 1],
      ['slow', 1],
      ['last', 0.25],
    ] as const) {
      await file(`steps/${name}/instruction.md`, name);
      await file(`steps/${name}/tests/test.sh`, `#!/bin/sh\n${name === 'slow' ? '[ "$WANT" = slow ] || exit 1\n' : ''}sh /tests/score.sh ${name} ${reward}\n`);
      await chmod(join(task, 'steps', name, 'tests', 'test.sh'), 0o755);
    }
    const jobDir = join(base, 'job');
    const agent = { command: 'n=$(cat "$BERTH_INSTRUCTION"); echo "$n" > "/app/$n.txt"; if [ "$n" = slow ]; then sleep 30; fi' };
    const run = await runHarborJob({ tasksDir: join(base, 'tasks'), backend: createDockerBackend(), jobDir, agent });
    expect(run.tasks[0]).toMatchObject({
      status: 'scored',
      outcome: {
        reward: 0.25,
        rewards: { reward: 0.25, style: 0.5 },
        steps: [
          { name: 'first', reward: 1 },
          { name: 'slow', reward: 1, exceptionType: 'AgentTimeoutError' },
          { name: 'last', reward: 0.25 },
        ],
      },
    });
    const result = JSON.parse(await readFile(join(jobDir, 'own', 'attempt-1', 'result.json'), 'utf8')) as AttemptResultFile;
    expect(result.stepResults![1]!.exceptionInfo).toMatchObject({ exceptionType: 'AgentTimeoutError' });
    expect(result.steps.find((s) => s.name === 'slow: agent')).toMatchObject({ ended: 'timed_out' });
    expect(await readFile(join(jobDir, 'own', 'attempt-1', 'steps', 'last', 'agent', 'instruction.md'), 'utf8')).toBe('last');
  });

  it('a step with no reward, or whose setup.sh fails, stops the run; with no reward at all the task failed, never retried', { timeout: 180_000 }, async () => {
    const base = await tempDir('multi-step-fail');
    dirs.push(base);
    const toml = `[environment]\ndocker_image = "${BASIC_IMAGE}"\nworkdir = "/app"\nnetwork_mode = "no-network"\n[[steps]]\nname = "one"\n[[steps]]\nname = "two"\n`;
    const write = async (task: string, path: string, text: string) => {
      await mkdir(join(base, 'tasks', task, path, '..'), { recursive: true });
      await writeFile(join(base, 'tasks', task, path), text);
    };
    for (const task of ['no-reward', 'bad-setup']) {
      await write(task, 'task.toml', toml);
      for (const step of ['one', 'two']) await write(task, `steps/${step}/instruction.md`, step);
      await write(task, 'tests/test.sh', '#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n');
    }
    await write('no-reward', 'steps/one/tests/test.sh', '#!/bin/sh\necho "no reward written" >&2\n');
    await write('bad-setup', 'steps/one/workdir/setup.sh', 'echo "seeding failed" >&2\nexit 3\n');
    const jobDir = join(base, 'job');
    const run = await runHarborJob({ tasksDir: join(base, 'tasks'), backend: createDockerBackend(), jobDir, agent: 'none', maxAttempts: 2 });
    const byId = Object.fromEntries(run.tasks.map((t) => [t.taskId, t]));
    expect(byId['no-reward']).toMatchObject({ status: 'scored', failure: { category: 'task_failure', type: 'RewardFileMissing' } });
    expect(byId['bad-setup']).toMatchObject({ status: 'scored', failure: { category: 'task_failure', type: 'StepSetupFailed' } });
    for (const t of run.tasks) expect(t.attempts, t.taskId).toHaveLength(1);
    const result = async (task: string) => JSON.parse(await readFile(join(jobDir, task, 'attempt-1', 'result.json'), 'utf8')) as AttemptResultFile;
    const noReward = await result('no-reward');
    expect(noReward.stepResults).toHaveLength(1);
    expect(noReward.stepResults![0]).toMatchObject({
      failure: { type: 'RewardFileMissing' },
      exceptionInfo: { exceptionType: 'RewardFileMissing' },
      stoppedRun: 'step "one" failed (RewardFileMissing)',
    });
    expect(noReward.failure?.message).toMatch(/^no step left a reward for the "mean" strategy; step "one": RewardFileMissing: .*no reward written/);
    const badSetup = await result('bad-setup');
    expect(badSetup.stepResults).toEqual([
      expect.objectContaining({
        name: 'one',
        setupExitCode: 3,
        exceptionInfo: expect.objectContaining({
          exceptionType: 'RuntimeError',
          exceptionMessage: "Step 'one' setup.sh exited with code 3; stderr: seeding failed",
        }),
      }),
    ]);
    // Neither the agent nor the verifier ran for the step whose setup failed.
    expect(badSetup.steps.map((s) => s.name).filter((n) => n.startsWith('one: '))).toEqual(['one: reset agent logs', 'one: upload workdir', 'one: setup']);
  });
});
