import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, EnvironmentSpecSchema, TaskFailure, classifyFailure, type Capabilities } from '@berth/core';
import { attemptDir, buildSpec, readReward, taskLabelValue, type HarborTask } from '@berth/harbor';
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
  image: 'berth-test/busybox:latest',
  resources: { cpus: 2, memoryMb: 512, storageMb: 10240, gpus: 0 },
  allowInternet: false,
  agentTimeoutSec: 60,
  verifierTimeoutSec: 60,
  testsDir: '/tasks/x/tests',
};
const docker = { name: 'docker', capabilities: { resourceLimits: { cpus: true, memory: true, storage: false } } as Capabilities };
const withStorage = { name: 'k8s', capabilities: { resourceLimits: { cpus: true, memory: true, storage: true } } as Capabilities };

describe('buildSpec', () => {
  it('maps the task to a valid spec: image, resources, network none, a label-safe task label', () => {
    const { spec, notes } = buildSpec(task, docker);
    expect(spec).toMatchObject({ image: task.image, resources: { cpus: 2, memoryMb: 512 }, network: 'none' });
    expect(spec.resources).not.toHaveProperty('gpus'); // 0 GPUs is not a request
    expect(EnvironmentSpecSchema.safeParse(spec).success).toBe(true);
    expect(spec.labels?.['berth.task']).toMatch(LABEL_VALUE);
    // Docker cannot limit storage: not asked for (which would refuse the task), but said.
    expect(spec.resources).not.toHaveProperty('storageMb');
    expect(notes).toEqual([expect.stringMatching(/storage limit of 10240 MiB not applied: the docker backend/)]);
  });

  it('asks for storage where the backend can limit it, and for the network only when allowed', () => {
    const { spec, notes } = buildSpec({ ...task, allowInternet: true, resources: { ...task.resources, gpus: 2 } }, withStorage);
    expect(spec.network).toBe('public');
    expect(spec.resources).toMatchObject({ storageMb: 10240, gpus: 2 });
    expect(notes).toEqual([]);
  });

  it('merges overrides one level deep, or lets a function rewrite the spec', () => {
    const merged = buildSpec(task, docker, { resources: { cpus: 1 }, labels: { team: 'evals' }, timeouts: { startupMs: 5000 } }).spec;
    expect(merged.resources).toEqual({ cpus: 1, memoryMb: 512 });
    expect(merged.labels).toMatchObject({ team: 'evals', 'berth.task': expect.any(String) });
    expect(merged.timeouts).toEqual({ startupMs: 5000 });
    const rewritten = buildSpec(task, docker, (spec, t) => ({ ...spec, image: { ref: `mirror/${t.image}` } })).spec;
    expect(rewritten.image).toEqual({ ref: `mirror/${task.image}` });
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

  it('reads reward.json, every numeric field into rewards', async () => {
    const dir = await verifierDir({ 'reward.json': JSON.stringify({ reward: 0.5, tests_passed: 3, note: 'x', nested: { a: 1 } }) });
    expect(await readReward(dir)).toEqual({ reward: 0.5, rewards: { reward: 0.5, tests_passed: 3 } });
    // A single numeric field is the reward.
    expect(await readReward(await verifierDir({ 'reward.json': '{"accuracy": 0.75}' }))).toEqual({ reward: 0.75, rewards: { accuracy: 0.75 } });
  });

  it('prefers reward.txt when both exist', async () => {
    expect(await readReward(await verifierDir({ 'reward.txt': '1', 'reward.json': '{"reward": 0}' }))).toEqual({ reward: 1 });
  });

  it('missing, empty and invalid reward files are task failures of their own kinds', async () => {
    expect((await failureOf({ 'other.txt': '1' })).type).toBe('RewardFileMissing');
    expect((await failureOf({ 'reward.txt': '' })).type).toBe('RewardFileEmpty');
    expect((await failureOf({ 'reward.txt': ' \n' })).type).toBe('RewardFileEmpty');
    expect((await failureOf({ 'reward.json': '' })).type).toBe('RewardFileEmpty');
    for (const text of ['PASS', '0x1', 'Infinity', 'NaN', '1 2', '1e999']) {
      expect((await failureOf({ 'reward.txt': text })).type, text).toBe('RewardFileInvalid');
    }
    for (const text of ['{', '[1]', '"1"', '{"reward": "1"}', '{"a": 1, "b": 2}', '{}']) {
      expect((await failureOf({ 'reward.json': text })).type, text).toBe('RewardFileInvalid');
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
