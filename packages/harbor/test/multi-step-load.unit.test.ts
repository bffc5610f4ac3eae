// harbor's `[[steps]]` as loadHarborTask reads them (harbor's StepConfig and task layout, at harbor
// 39b85872, v0.22.0): harbor's cookbook recipe resolved field by field, and a ConfigError naming
// `steps[i].<field>` or the missing file for each bad one; the reward rules on their own. (Runs on
// Docker: multi-step-docker.test.ts.)
import { cp, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { BerthError, ConfigError } from '@berth/core';
import { checkTask, loadHarborTask, type StepResultRecord } from '@berth/harbor';
import { selectReward, stopReason } from '../src/multi-step-reward.js';
import { tempDir } from './support.js';

const RECIPE = fileURLToPath(new URL('../../../test/fixtures/harbor-cookbook/multi-step/', import.meta.url));

const roots: string[] = [];
afterAll(() => Promise.all(roots.map((d) => rm(d, { recursive: true, force: true }))));

/** A multi-step task: task.toml, and each named step's instruction.md and tests/test.sh. */
async function stepTask(toml: string, steps: string[] = ['one', 'two'], files: Record<string, string> = {}): Promise<string> {
  const root = await tempDir('steps-load');
  roots.push(root);
  const dir = join(root, 'task');
  await mkdir(dir, { recursive: true });
  // Root keys first: the [environment] table comes last so it takes none of them.
  await writeFile(join(dir, 'task.toml'), `${toml}\n[environment]\ndocker_image = "x"\n`);
  for (const name of steps) {
    await mkdir(join(dir, 'steps', name, 'tests'), { recursive: true });
    await writeFile(join(dir, 'steps', name, 'instruction.md'), `Do ${name}.\n`);
    await writeFile(join(dir, 'steps', name, 'tests', 'test.sh'), '#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n');
  }
  for (const [path, text] of Object.entries(files)) {
    await mkdir(join(dir, path, '..'), { recursive: true });
    await writeFile(join(dir, path), text);
  }
  return dir;
}

async function refusal(loading: Promise<unknown>): Promise<ConfigError> {
  const error = await loading.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(ConfigError.isInstance(error), `expected a ConfigError, got ${String(error)}`).toBe(true);
  return error as ConfigError;
}

const TWO = '[[steps]]\nname = "one"\n[[steps]]\nname = "two"\n';

describe('[[steps]] in task.toml', () => {
  it("reads harbor's cookbook recipe step by step, with harbor's fallbacks", async () => {
    const task = await loadHarborTask(RECIPE);
    expect(task.multiStepRewardStrategy).toBe('mean');
    expect(task.steps?.map((s) => s.name)).toEqual(['scaffold', 'implement', 'document']);
    const [scaffold, implement, document] = task.steps!;
    expect(scaffold).toMatchObject({
      agentTimeoutSec: 60,
      verifierTimeoutSec: 30,
      minReward: 1,
      users: {},
      network: { agent: 'public', verifier: 'public' },
      instructionPath: join(RECIPE, 'steps/scaffold/instruction.md'),
      // The task's tests/ (helpers.sh) first, the step's own over it.
      testsDirs: [join(RECIPE, 'tests'), join(RECIPE, 'steps/scaffold/tests')],
      solutionDir: join(RECIPE, 'steps/scaffold/solution'),
      hasSetup: false,
      artifacts: [],
      verifierCollect: [],
    });
    expect(scaffold!.workdirDir).toBeUndefined();
    expect(implement).toMatchObject({
      agentTimeoutSec: 90,
      minReward: 0.5,
      verifierEnv: { EXPECTED_NAME: 'Harbor', EXPECTED_GREETING: 'Hello, Harbor!' },
      healthcheck: { command: 'test -x /app/greet.sh', intervalSec: 1, timeoutSec: 5, retries: 3, startPeriodSec: 0, startIntervalSec: 5 },
      workdirDir: join(RECIPE, 'steps/implement/workdir'),
      hasSetup: true,
    });
    expect(document).toMatchObject({ artifacts: [{ source: '/app/README.md' }] });
    expect(document!.minReward).toBeUndefined();
    // Task-level settings stay the task's: artifacts collected after every step, the workdir.
    expect(task.artifacts).toEqual([{ source: '/app/greet.sh' }]);
    expect(task.workdir).toBe('/app');
    expect(task.notes).toEqual([]);
    // The oracle runs each step's solution.
    expect(await checkTask(task, 'oracle')).toEqual([]);
  });

  it("falls back on the task's agent timeout, users and networks, but not its verifier timeout (harbor's step table has its own 600 s)", async () => {
    const dir = await stepTask(
      '[agent]\ntimeout_sec = 300\nuser = "agent"\nnetwork_mode = "no-network"\n[verifier]\ntimeout_sec = 60\nuser = "root"\n' +
        '[[steps]]\nname = "one"\n[[steps]]\nname = "two"\n[steps.agent]\ntimeout_sec = 10\nuser = 1000\nnetwork_mode = "public"\n[steps.verifier]\nnetwork_mode = "no-network"\n',
    );
    const [one, two] = (await loadHarborTask(dir)).steps!;
    expect(one).toMatchObject({
      agentTimeoutSec: 300,
      verifierTimeoutSec: 600,
      users: { agent: 'agent', verifier: 'root' },
      network: { agent: 'none', verifier: 'public' },
    });
    expect(two).toMatchObject({
      agentTimeoutSec: 10,
      verifierTimeoutSec: 600,
      users: { agent: '1000', verifier: 'root' },
      network: { agent: 'public', verifier: 'none' },
    });
  });

  it('"final" is kept; an empty [[steps]] list is a single-step task, as harbor\'s has_steps says', async () => {
    expect((await loadHarborTask(await stepTask(`multi_step_reward_strategy = "final"\n${TWO}`))).multiStepRewardStrategy).toBe('final');
    const single = await stepTask('steps = []\n', [], { 'tests/test.sh': '#!/bin/sh\n' });
    expect((await loadHarborTask(single)).steps).toBeUndefined();
  });

  it("a step without a test.sh of its own uses the task's tests/test.sh", async () => {
    const dir = await stepTask(TWO, ['one', 'two'], { 'tests/test.sh': '#!/bin/sh\n' });
    await rm(join(dir, 'steps', 'two', 'tests'), { recursive: true });
    expect((await loadHarborTask(dir)).steps![1]!.testsDirs).toEqual([join(dir, 'tests')]);
  });

  it('notes an unknown key of a step, with the field it probably meant', async () => {
    const task = await loadHarborTask(await stepTask('[[steps]]\nname = "one"\nmin_rewrd = 1\n[steps.agent]\ntimeout_secs = 5\n', ['one']));
    expect(task.notes).toEqual([
      'steps[0].agent.timeout_secs is not a harbor task.toml field: ignored (harbor ignores it too); did you mean steps[0].agent.timeout_sec?',
      'steps[0].min_rewrd is not a harbor task.toml field: ignored (harbor ignores it too); did you mean steps[0].min_reward?',
    ]);
  });

  it.each([
    ['[[steps]]\ntimeout_sec = 5\n', 'steps[0].name', /must be a non-empty string, got undefined/],
    ['steps = ["one"]\n', 'steps[0]', /must be a table \(\[\[steps\]\]/],
    ['steps = "one"\n', '[steps]', /must be an array of tables/],
    [`${TWO}[steps.agent]\ntimeout_sec = 0\n`, 'steps[1].agent.timeout_sec', /positive number, got 0/],
    [`${TWO}[steps.verifier]\ntimeout_sec = "30"\n`, 'steps[1].verifier.timeout_sec', /positive number, got "30"/],
    [`${TWO}[steps.verifier.env]\nA = 1\n`, 'steps[1].verifier.env', /table of strings/],
    [`${TWO}min_reward = "high"\n`, 'steps[1].min_reward', /a number or a table of numbers/],
    [`${TWO}min_reward = { correctness = "0.8" }\n`, 'steps[1].min_reward', /a number or a table of numbers/],
    [`${TWO}[steps.healthcheck]\ninterval_sec = 1\n`, 'steps[1].healthcheck.command', /non-empty string/],
    [`multi_step_reward_strategy = "max"\n${TWO}`, '[multi_step_reward_strategy]', /"mean" or "final", got "max"/],
    ['[[steps]]\nname = "../up"\n', 'steps[0].name', /one directory under steps\//],
    ['[[steps]]\nname = "one"\n[[steps]]\nname = "one"\n', 'steps[1].name', /repeats the step name "one"/],
    [`${TWO}artifacts = [{ source = "/x", service = "db" }]\n`, 'steps[1].artifacts[0].service', /compose service "db"/],
    [`${TWO}[[steps.verifier.collect]]\ncommand = "true"\nservice = "db"\n`, 'steps[1].verifier.collect[0].service', /compose service "db"/],
    [`${TWO}[steps.verifier]\nallowed_hosts = ["example.com"]\n`, 'steps[1].verifier.allowed_hosts', /only valid with/],
    [`${TWO}[steps.verifier]\nenvironment_mode = "separate"\n`, 'steps[1].verifier.environment_mode', /separate sandbox.*environment_mode = "shared"/],
    [`[verifier.environment]\ndocker_image = "v"\n${TWO}`, 'verifier.environment_mode', /step "one" verify in a separate sandbox/],
    [
      `${TWO}[steps.verifier]\nenvironment_mode = "shared"\n[steps.verifier.environment]\ndocker_image = "v"\n`,
      'steps[1].verifier.environment',
      /cannot go with/,
    ],
  ])('refuses %j naming %s', async (toml, field, message) => {
    const error = await refusal(loadHarborTask(await stepTask(toml)));
    expect(error.path).toBe(field);
    expect(error.message).toMatch(message);
    expect(error.message).toContain('task.toml');
  });

  it('refuses what harbor requires of the layout (steps/<name>/, its instruction.md); a step without a test.sh is a problem of the task', async () => {
    const noDir = await stepTask(TWO, ['one']);
    expect((await refusal(loadHarborTask(noDir))).path).toBe('steps/two');
    const noInstruction = await stepTask(TWO);
    await rm(join(noInstruction, 'steps', 'two', 'instruction.md'));
    const error = await refusal(loadHarborTask(noInstruction));
    expect(error.path).toBe('steps/two/instruction.md');
    expect(error.message).toMatch(/step "two" has no steps\/two\/instruction.md/);
    const noTest = await stepTask(TWO);
    await rm(join(noTest, 'steps', 'one', 'tests', 'test.sh'));
    // Like a single-step task without one: the task loads, and its trials end in a TaskDefinitionError.
    expect((await loadHarborTask(noTest)).problems?.map((p) => p.path)).toEqual(['steps/one/tests/test.sh']);
  });

  it("a ${VAR} a step's verifier env needs from the host stops the load, naming the step", async () => {
    const dir = await stepTask(`${TWO}[steps.verifier.env]\nJUDGE_KEY = "\${JUDGE_KEY}"\n`);
    const error = await refusal(loadHarborTask(dir, { hostEnv: {} }));
    expect(error.path).toBe('steps[1].verifier.env');
    expect((await loadHarborTask(dir, { hostEnv: { JUDGE_KEY: 'k' } })).steps![1]!.verifierEnv).toEqual({ JUDGE_KEY: '${JUDGE_KEY}' });
  });

  it("the oracle needs each step's solve.sh, or the task's", async () => {
    const dir = await stepTask(TWO, ['one', 'two'], { 'steps/one/solution/solve.sh': '#!/bin/sh\n' });
    const checks = await checkTask(await loadHarborTask(dir), 'oracle');
    expect(checks).toHaveLength(1);
    expect(checks[0]!.message).toMatch(/step "two" has no steps\/two\/solution\/solve.sh and the task no solution\/solve.sh/);
    await mkdir(join(dir, 'solution'));
    await writeFile(join(dir, 'solution', 'solve.sh'), '#!/bin/sh\n');
    const task = await loadHarborTask(dir);
    expect(task.steps!.map((s) => s.solutionDir)).toEqual([join(dir, 'steps/one/solution'), join(dir, 'solution')]);
    expect(await checkTask(task, 'oracle')).toEqual([]);
    expect(await checkTask(task, 'none')).toEqual([]);
  });

  it('the corpus copy of the recipe without its step directories is refused naming the first one', async () => {
    const root = await tempDir('steps-corpus');
    roots.push(root);
    await cp(join(RECIPE, 'task.toml'), join(root, 'task', 'task.toml'));
    await cp(join(RECIPE, 'environment'), join(root, 'task', 'environment'), { recursive: true });
    const error = await loadHarborTask(join(root, 'task')).catch((e: unknown) => e);
    expect(BerthError.isInstance(error) && (error as ConfigError).path).toBe('steps/scaffold');
  });
});

describe("harbor's multi-step reward rules", () => {
  const ran = (name: string, result?: StepResultRecord['verifierResult'], exceptionType?: string): StepResultRecord => ({
    name,
    startedAt: '',
    ...(result ? { verifierResult: result } : {}),
    ...(exceptionType ? { exceptionInfo: { exceptionType, exceptionMessage: '', occurredAt: '' } } : {}),
  });

  it('min_reward: a number gates on "reward", a table on each key; missing counts as -inf', () => {
    expect(stopReason({ name: 'a', minReward: 1 }, ran('a', { reward: 1 }))).toBeUndefined();
    expect(stopReason({ name: 'a', minReward: 1 }, ran('a', { reward: 0.5 }))).toBe('step "a": reward=0.5 below min_reward 1');
    expect(stopReason({ name: 'a', minReward: 0.5 }, ran('a', { reward: 0.7, rewards: { accuracy: 0.7 } }))).toBe(
      'step "a": reward=-Infinity below min_reward 0.5',
    );
    const table = { correctness: 0.8, style: 0.5 };
    expect(stopReason({ name: 'a', minReward: table }, ran('a', { reward: 1, rewards: { reward: 1, correctness: 0.9, style: 0.5 } }))).toBeUndefined();
    expect(stopReason({ name: 'a', minReward: table }, ran('a', { reward: 1, rewards: { reward: 1, correctness: 0.9 } }))).toMatch(/style=-Infinity/);
    expect(stopReason({ name: 'a' }, ran('a', { reward: 0 }))).toBeUndefined();
    // A step that failed without a result stops the run whatever its threshold; one with a result goes on.
    expect(stopReason({ name: 'a' }, ran('a', undefined, 'RewardFileMissing'))).toBe('step "a" failed (RewardFileMissing)');
    expect(stopReason({ name: 'a' }, ran('a', { reward: 1 }, 'AgentTimeoutError'))).toBeUndefined();
  });

  it('"mean" averages each key over the steps with a result (a missing key is 0); "final" is the last step that ran', () => {
    const records = [ran('a', { reward: 1 }), ran('b', undefined, 'VerifierTimeout'), ran('c', { reward: 0 })];
    expect(selectReward(undefined, records)).toEqual({ reward: 0.5 });
    expect(selectReward('mean', records)).toEqual({ reward: 0.5 });
    expect(selectReward('final', records)).toEqual({ reward: 0 });
    expect(selectReward('final', records.slice(0, 2))).toBeUndefined();
    const dims = [ran('a', { reward: 1, rewards: { reward: 1, style: 1 } }), ran('b', { reward: 0 })];
    expect(selectReward('mean', dims)).toEqual({ reward: 0.5, rewards: { reward: 0.5, style: 0.5 } });
    expect(selectReward('mean', [ran('a', undefined, 'RuntimeError')])).toBeUndefined();
  });
});
