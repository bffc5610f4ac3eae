import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  CapabilityError,
  ConfigError,
  EnvironmentSpecSchema,
  TaskDefinitionError,
  TaskFailure,
  classifyFailure,
  redactSecrets,
  type Capabilities,
} from '@berth/core';
import { attemptDir, buildSpec, readReward, resolvedEnvironment, taskLabelValue, type HarborTask } from '@berth/harbor';
import { tempDir } from './support.js';

const LABEL_VALUE = /^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$/;

describe('taskLabelValue', () => {
  it('keeps a label-safe id as it is', () => {
    expect(taskLabelValue('hello-world')).toBe('hello-world');
    expect(taskLabelValue('django__django-11099')).toBe('django__django-11099');
    expect(taskLabelValue('a'.repeat(63))).toBe('a'.repeat(63));
  });

  it('makes any other id label-safe, at most 63 characters, and distinct', () => {
    const odd = ['a'.repeat(64), `x${'-'.repeat(80)}y`, 'has space', 'ünïcödé', '-leading', 'trailing.', '...', 'a/b', 'a:b'];
    const values = odd.map(taskLabelValue);
    for (const v of values) {
      expect(v.length).toBeLessThanOrEqual(63);
      expect(v).toMatch(LABEL_VALUE);
    }
    expect(new Set(values).size).toBe(values.length);
    expect(taskLabelValue('a/b')).not.toBe(taskLabelValue('a:b'));
  });
});

const task: HarborTask = {
  id: 'some task with spaces and a very long name that will not fit in a label value',
  dir: '/tasks/x',
  configPath: '/tasks/x/task.toml',
  image: { ref: 'berth-test/busybox:latest' },
  buildTimeoutSec: 600,
  resources: { cpus: 2, memoryMb: 512, storageMb: 10240, gpus: 0 },
  network: { environment: 'none', agent: 'none', verifier: 'none' },
  env: { environment: {}, verifier: {}, solution: {} },
  users: {},
  agentTimeoutSec: 60,
  verifierTimeoutSec: 60,
  artifacts: [],
  agentConfig: { mcpServers: [] },
  notes: [],
  testsDir: '/tasks/x/tests',
};
const caps = (extra: Partial<Capabilities>) =>
  ({ resourceLimits: { cpus: true, memory: true, storage: false }, networkSwitch: true, execUser: true, ...extra }) as Capabilities;
const docker = { name: 'docker', capabilities: caps({}) };
const withStorage = { name: 'k8s', capabilities: caps({ resourceLimits: { cpus: true, memory: true, storage: true } }) };
const noSwitch = { name: 'modal', capabilities: caps({ networkSwitch: false }) };

describe('buildSpec', () => {
  it('maps the task to a valid spec: image, resources, network, a label-safe task label', () => {
    const { spec, notes } = buildSpec(task, docker);
    expect(spec).toMatchObject({ image: 'berth-test/busybox:latest', resources: { cpus: 2, memoryMb: 512 }, network: 'none', env: {} });
    expect(spec).not.toHaveProperty('networkSwitch');
    expect(spec.resources).not.toHaveProperty('gpus'); // 0 GPUs is not a request
    expect(EnvironmentSpecSchema.safeParse(spec).success).toBe(true);
    expect(spec.labels?.['berth.task']).toMatch(LABEL_VALUE);
    // Docker cannot limit storage: not asked for (which would refuse the task), but said.
    expect(spec.resources).not.toHaveProperty('storageMb');
    expect(notes).toEqual([expect.stringMatching(/storage limit of 10240 MiB not applied: the docker backend/)]);
  });

  it('asks for storage where the backend can limit it; a task built from a Dockerfile gets its build timeout', () => {
    const built = { ...task, image: { build: { context: '/tasks/x/environment', dockerfile: 'Dockerfile' } }, buildTimeoutSec: 900 };
    const { spec, notes } = buildSpec({ ...built, resources: { ...task.resources, gpus: 2 } }, withStorage);
    expect(spec.resources).toMatchObject({ storageMb: 10240, gpus: 2 });
    expect(spec.image).toEqual({ build: { context: '/tasks/x/environment', dockerfile: 'Dockerfile', timeoutMs: 900_000 } });
    expect(EnvironmentSpecSchema.safeParse(spec).success).toBe(true);
    expect(notes).toEqual([]);
  });

  it('gpu_types go along as resources.gpuTypes (any of them), only with a count', () => {
    const gpu = { ...task, resources: { gpus: 1, gpuTypes: ['A100-40GB', 'H100'] } };
    expect(buildSpec(gpu, withStorage).spec.resources).toEqual({ gpus: 1, gpuTypes: ['A100-40GB', 'H100'] });
    expect(EnvironmentSpecSchema.safeParse(buildSpec(gpu, withStorage).spec).success).toBe(true);
    expect(buildSpec({ ...task, resources: { gpus: 0, gpuTypes: ['H100'] } }, withStorage).spec.resources).toEqual({});
  });

  it('phases on different networks make a switchable sandbox; a backend that cannot switch refuses the task', () => {
    const online = { ...task, network: { environment: 'none' as const, agent: 'none' as const, verifier: 'public' as const } };
    const { spec } = buildSpec(online, docker);
    expect(spec).toMatchObject({ network: 'none', networkSwitch: true });
    expect(resolvedEnvironment(online, spec).network).toEqual({ environment: 'none', agent: 'none', verifier: 'public', switched: true });
    let error: unknown;
    try {
      buildSpec(online, noSwitch);
    } catch (e) {
      error = e;
    }
    expect(CapabilityError.isInstance(error) && error.capability).toBe('networkSwitch');
    expect((error as Error).message).toMatch(/its verifier with public; the modal backend cannot switch/);
  });

  it('a task with users on a backend that cannot run commands as another user is refused', () => {
    let error: unknown;
    try {
      buildSpec({ ...task, users: { agent: 'agent', verifier: 'root' } }, { name: 'k8s', capabilities: caps({ execUser: false }) });
    } catch (e) {
      error = e;
    }
    expect(CapabilityError.isInstance(error) && error.capability).toBe('execUser');
    expect((error as Error).message).toContain('agent as user "agent"');
    expect(buildSpec({ ...task, users: { verifier: 'root' } }, { name: 'k8s', capabilities: caps({ execUser: false }) }).spec).toBeDefined();
  });

  it('resolves [environment.env] from the host; result.json gets the names only', () => {
    const secret = 'sk-test-0123456789abcdef';
    const withEnv = {
      ...task,
      env: {
        environment: { KEY: '${BERTH_KEY}', MODE: '${BERTH_MODE:-fast}', EMPTY: '${BERTH_EMPTY:-x}', LITERAL: 'pre-${BERTH_KEY}' },
        verifier: { V: '1' },
        solution: {},
      },
    };
    const { spec } = buildSpec(withEnv, docker, undefined, { BERTH_KEY: secret, BERTH_EMPTY: '' });
    expect(spec.env).toEqual({ KEY: secret, MODE: 'fast', EMPTY: '', LITERAL: 'pre-${BERTH_KEY}' });
    const record = JSON.stringify(resolvedEnvironment(withEnv, spec));
    expect(record).not.toContain(secret);
    expect(resolvedEnvironment(withEnv, spec).env).toEqual({ environment: ['EMPTY', 'KEY', 'LITERAL', 'MODE'], verifier: ['V'], solution: [] });
    // A value taken from the host is masked wherever berth prints text.
    expect(redactSecrets(`token ${secret}`)).toBe('token [REDACTED]');
    let missing: unknown;
    try {
      buildSpec(withEnv, docker, undefined, {});
    } catch (e) {
      missing = e;
    }
    expect(ConfigError.isInstance(missing) && missing.path).toBe('environment.env');
    expect((missing as Error).message).toContain('BERTH_KEY (for KEY)');
  });

  it('merges overrides one level deep, or lets a function rewrite the spec', () => {
    const merged = buildSpec(task, docker, { resources: { cpus: 1 }, labels: { team: 'evals' }, timeouts: { startupMs: 5000 } }).spec;
    expect(merged.resources).toEqual({ cpus: 1, memoryMb: 512 });
    expect(merged.labels).toMatchObject({ team: 'evals', 'berth.task': expect.any(String) });
    expect(merged.timeouts).toEqual({ startupMs: 5000 });
    const rewritten = buildSpec(task, docker, (spec) => ({ ...spec, image: { ref: `mirror/${String(spec.image)}` } })).spec;
    expect(rewritten.image).toEqual({ ref: 'mirror/berth-test/busybox:latest' });
  });
});

describe('readReward', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  });
  async function verifierDir(files: Record<string, string>): Promise<string> {
    const dir = await tempDir('reward');
    dirs.push(dir);
    await mkdir(dir, { recursive: true });
    for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
    return dir;
  }
  async function failureOf(files: Record<string, string>): Promise<TaskFailure> {
    const error = await readReward(await verifierDir(files)).catch((e: unknown) => e);
    expect(TaskFailure.isInstance(error), String(error)).toBe(true);
    expect(classifyFailure(error).category).toBe('task_failure');
    return error as TaskFailure;
  }

  it('reads reward.txt', async () => {
    expect(await readReward(await verifierDir({ 'reward.txt': '1\n' }))).toEqual({ reward: 1 });
    expect(await readReward(await verifierDir({ 'reward.txt': ' 0.25 ' }))).toEqual({ reward: 0.25 });
    expect(await readReward(await verifierDir({ 'reward.txt': '0' }))).toEqual({ reward: 0 });
  });

  it('reads reward.json, every field into rewards; any value that is not a finite number makes it invalid, as in harbor', async () => {
    const dir = await verifierDir({ 'reward.json': JSON.stringify({ reward: 0.5, tests_passed: 3 }) });
    expect(await readReward(dir)).toEqual({ reward: 0.5, rewards: { reward: 0.5, tests_passed: 3 } });
    // A single numeric field is the reward.
    expect(await readReward(await verifierDir({ 'reward.json': '{"accuracy": 0.75}' }))).toEqual({ reward: 0.75, rewards: { accuracy: 0.75 } });
    for (const bad of ['{"reward": 1, "note": "x"}', '{"reward": 1, "nested": {"a": 1}}', '{"reward": 1e999}', '{"reward": "NaN"}']) {
      const error = await failureOf({ 'reward.json': bad });
      expect(error.type, bad).toBe('RewardFileInvalid');
    }
  });

  it('prefers reward.json when both exist (harbor reads it first)', async () => {
    expect(await readReward(await verifierDir({ 'reward.txt': '1', 'reward.json': '{"reward": 0}' }))).toEqual({ reward: 0, rewards: { reward: 0 } });
  });

  it('missing, empty and invalid reward files are task failures of their own kinds', async () => {
    expect((await failureOf({ 'other.txt': '1' })).type).toBe('RewardFileMissing');
    expect((await failureOf({ 'reward.txt': '' })).type).toBe('RewardFileEmpty');
    expect((await failureOf({ 'reward.txt': ' \n' })).type).toBe('RewardFileEmpty');
    expect((await failureOf({ 'reward.json': '' })).type).toBe('RewardFileEmpty');
    for (const text of ['PASS', '0x1', 'Infinity', 'NaN', '1 2', '1e999']) {
      expect((await failureOf({ 'reward.txt': text })).type, text).toBe('RewardFileInvalid');
    }
    for (const text of ['{', '[1]', '"1"', '{"reward": "1"}']) {
      expect((await failureOf({ 'reward.json': text })).type, text).toBe('RewardFileInvalid');
    }
  });

  it('a reward.json with named fields and no "reward" (or no field) scores nothing by harbor\'s rule: a TaskDefinitionError naming the fields, never a 0', async () => {
    for (const [text, said] of [
      ['{"accuracy": 0.75, "passed": 3}', 'the fields accuracy, passed and no "reward"'],
      ['{}', 'no fields and no "reward"'],
    ] as const) {
      const error = await readReward(await verifierDir({ 'reward.json': text })).catch((e: unknown) => e);
      expect(TaskDefinitionError.isInstance(error), text).toBe(true);
      expect(TaskFailure.isInstance(error)).toBe(false);
      expect(classifyFailure(error)).toMatchObject({ category: 'permanent_infra', type: 'TaskDefinitionError', retryable: false });
      expect((error as TaskDefinitionError).path).toBe('tests/test.sh');
      expect((error as Error).message).toContain(said);
      expect((error as Error).message).toContain('have tests/test.sh write "reward"');
    }
  });
});

describe('attemptDir', () => {
  it('is <jobDir>/<taskId>/attempt-<n>, and refuses ids that could point elsewhere', () => {
    expect(attemptDir('/job', 'hello-world', 2)).toBe(join('/job', 'hello-world', 'attempt-2'));
    for (const id of ['', '.', '..', 'a/b', '../x', 'a\\b']) {
      let error: unknown;
      try {
        attemptDir('/job', id, 1);
      } catch (e) {
        error = e;
      }
      expect(ConfigError.isInstance(error), JSON.stringify(id)).toBe(true);
      expect((error as ConfigError).path).toBe('task.id');
    }
  });
});
