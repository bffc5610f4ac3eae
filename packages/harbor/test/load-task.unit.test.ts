import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, classifyFailure } from '@berth/core';
import { loadHarborTask, loadHarborTasks, parseSizeToMb } from '@berth/harbor';
import { BASIC_IMAGE, taskToml, tempDir, writeTask } from './support.js';

const roots: string[] = [];
async function root(): Promise<string> {
  const dir = await tempDir('load');
  roots.push(dir);
  return dir;
}
afterAll(async () => {
  await Promise.all(roots.map((d) => rm(d, { recursive: true, force: true })));
});

/** The ConfigError a load rejects with (fails the test if it resolves or throws something else). */
async function configErrorOf(promise: Promise<unknown>): Promise<ConfigError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(ConfigError.isInstance(error), `expected a ConfigError, got ${String(error)}`).toBe(true);
  return error as ConfigError;
}

describe('loadHarborTask', () => {
  it('reads every field of a complete task', async () => {
    const dir = await writeTask(await root(), 'full-task', {
      toml: `version = "1.0"
[task]
name = "acme/full-task"
[metadata]
difficulty = "hard"
[agent]
timeout_sec = 120.5
user = "agent"
network_mode = "no-network"
[verifier]
timeout_sec = 30
user = 0
[verifier.env]
MODE = "strict"
[solution.env]
TOKEN = "\${BERTH_TEST_TOKEN:-none}"
[environment]
docker_image = "ghcr.io/acme/env:1"
build_timeout_sec = 900
cpus = 2.5
memory_mb = 4096
storage_mb = 10240
gpus = 1
allow_internet = true
workdir = "/app"
[environment.env]
PATH = "/app/.venv/bin:/usr/bin:/bin"
[environment.healthcheck]
command = "test -f /ready"
retries = 5
[[artifacts]]
source = "/app/out"
destination = "out"
`,
      instruction: 'do the thing',
    });
    const task = await loadHarborTask(dir);
    expect(task).toEqual({
      id: 'full-task',
      dir,
      configPath: join(dir, 'task.toml'),
      contentHash: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
      name: 'acme/full-task',
      image: { ref: 'ghcr.io/acme/env:1' },
      buildTimeoutSec: 900,
      resources: { cpus: 2.5, memoryMb: 4096, storageMb: 10240, gpus: 1 },
      network: { environment: 'public', agent: 'none', verifier: 'public' },
      env: { environment: { PATH: '/app/.venv/bin:/usr/bin:/bin' }, verifier: { MODE: 'strict' }, solution: { TOKEN: '${BERTH_TEST_TOKEN:-none}' } },
      users: { agent: 'agent', verifier: '0' },
      workdir: '/app',
      agentTimeoutSec: 120.5,
      verifierTimeoutSec: 30,
      healthcheck: { command: 'test -f /ready', intervalSec: 5, timeoutSec: 30, startPeriodSec: 0, startIntervalSec: 5, retries: 5 },
      artifacts: [{ source: '/app/out', destination: 'out' }],
      agentConfig: { mcpServers: [] },
      notes: [],
      testsDir: join(dir, 'tests'),
      solutionDir: join(dir, 'solution'),
      instructionPath: join(dir, 'instruction.md'),
    });
  });

  it("harbor's defaults: public network, no agent timeout, 600 s verifier and build, no resources asked, no solution", async () => {
    const dir = await writeTask(await root(), 'minimal', { toml: `[environment]\ndocker_image = "${BASIC_IMAGE}"\n`, solve: null });
    const task = await loadHarborTask(dir);
    expect(task.network).toEqual({ environment: 'public', agent: 'public', verifier: 'public' });
    expect(task.agentTimeoutSec).toBeUndefined();
    expect(task.verifierTimeoutSec).toBe(600);
    expect(task.buildTimeoutSec).toBe(600);
    expect(task.resources).toEqual({});
    expect(task.users).toEqual({});
    expect(task.workdir).toBeUndefined();
    expect(task.solutionDir).toBeUndefined();
    expect(task.instructionPath).toBeUndefined();
  });

  it('accepts memory = "2G" (and storage = "10G") the compose way', async () => {
    const r = await root();
    const task = await loadHarborTask(await writeTask(r, 'mem', { toml: `[environment]\ndocker_image = "x"\nmemory = "2G"\nstorage = "10G"\n` }));
    expect(task.resources).toEqual({ memoryMb: 2048, storageMb: 10240 });
    // Both forms at once are fine when they agree...
    const same = await loadHarborTask(await writeTask(r, 'same', { toml: `[environment]\ndocker_image = "x"\nmemory = "1G"\nmemory_mb = 1024\n` }));
    expect(same.resources.memoryMb).toBe(1024);
    // ...and refused when they do not.
    const error = await configErrorOf(
      loadHarborTask(await writeTask(r, 'disagree', { toml: `[environment]\ndocker_image = "x"\nmemory = "2G"\nmemory_mb = 1024\n` })),
    );
    expect(error.path).toBe('environment.memory');
    expect(error.message).toMatch(/disagrees with environment\.memory_mb/);
  });

  it.each([
    ['memory = "2"', 'environment.memory', /with a unit such as "2G"/],
    ['memory = "lots"', 'environment.memory', /"lots"/],
    ['memory_mb = 1.5', 'environment.memory_mb', /positive integer/],
    ['cpus = "2"', 'environment.cpus', /positive number, got "2"/],
    ['cpus = 0', 'environment.cpus', /positive number, got 0/],
    ['gpus = 1.5', 'environment.gpus', /whole number/],
    ['gpus = 1\ngpu_types = ["A100-40GB:2"]', 'environment.gpu_types', /one GPU type such as "H100" \(the count is environment\.gpus\)/],
    ['allow_internet = "yes"', 'environment.allow_internet', /true or false/],
    ['docker_image = ""', 'environment.docker_image', /non-empty string/],
  ])('refuses %s, naming the file and %s', async (line, path, message) => {
    const dir = await writeTask(await root(), 'bad-field', {
      toml: line.startsWith('docker_image') ? `[environment]\n${line}\n` : `[environment]\ndocker_image = "x"\n${line}\n`,
    });
    const error = await configErrorOf(loadHarborTask(dir));
    expect(error.path).toBe(path);
    expect(error.message).toContain(join(dir, 'task.toml'));
    expect(error.message).toMatch(message);
    expect(classifyFailure(error)).toMatchObject({ category: 'permanent_infra', type: 'ConfigError' });
  });

  it('refuses bad timeouts and a section that is not a table', async () => {
    const r = await root();
    const timeout = await configErrorOf(
      loadHarborTask(await writeTask(r, 't1', { toml: taskToml(BASIC_IMAGE).replace('[verifier]\ntimeout_sec = 60.0', '[verifier]\ntimeout_sec = -1') })),
    );
    expect(timeout.path).toBe('verifier.timeout_sec');
    const section = await configErrorOf(loadHarborTask(await writeTask(r, 't2', { toml: 'agent = 3\n[environment]\ndocker_image = "x"\n' })));
    expect(section.path).toBe('[agent]');
  });

  it('without docker_image the image is built from environment/Dockerfile; with neither, the error says both', async () => {
    const r = await root();
    const built = await writeTask(r, 'built', { toml: '[environment]\ncpus = 1\n' });
    await mkdir(join(built, 'environment'));
    await writeFile(join(built, 'environment', 'Dockerfile'), `FROM ${BASIC_IMAGE}\n`);
    expect((await loadHarborTask(built)).image).toEqual({ build: { context: join(built, 'environment'), dockerfile: 'Dockerfile' } });

    const dir = await writeTask(r, 'no-image', { toml: '[environment]\ncpus = 1\nimage = "x"\n' });
    const error = await configErrorOf(loadHarborTask(dir));
    expect(error.path).toBe('environment.docker_image');
    expect(error.message).toContain(join(dir, 'task.toml'));
    expect(error.message).toMatch(/no environment\/Dockerfile/);
    expect(error.message).toMatch(/did you mean docker_image/);
  });

  it("a separate verifier: its own table, network and image in harbor's order; shared with a table, or compose in tests/, refused", async () => {
    const r = await root();
    const separate = await writeTask(r, 'separate', {
      toml: `[environment]\ndocker_image = "agent:1"\nnetwork_mode = "public"\n[verifier]\nenvironment_mode = "separate"\n[verifier.environment]\ndocker_image = "judge:1"\nallow_internet = false\ncpus = 2\nmemory = "1G"\nworkdir = "/judge"\n[verifier.environment.env]\nK = "v"\n`,
    });
    const task = await loadHarborTask(separate);
    expect(task.network).toEqual({ environment: 'public', agent: 'public', verifier: 'none' });
    expect(task.verifierEnvironment).toEqual({
      image: { ref: 'judge:1' },
      testsBundled: true,
      buildTimeoutSec: 600,
      resources: { cpus: 2, memoryMb: 1024 },
      env: { K: 'v' },
      workdir: '/judge',
    });
    // Separate without a table: a copy of [environment], the agent's image, tests uploaded.
    const copy = await loadHarborTask(
      await writeTask(r, 'copy', { toml: `[environment]\ndocker_image = "agent:1"\ncpus = 1\n[verifier]\nenvironment_mode = "separate"\n` }),
    );
    expect(copy.verifierEnvironment).toMatchObject({ image: { ref: 'agent:1' }, testsBundled: false, resources: { cpus: 1 } });

    const shared = await configErrorOf(
      loadHarborTask(
        await writeTask(r, 'shared', {
          toml: `[environment]\ndocker_image = "x"\n[verifier]\nenvironment_mode = "shared"\n[verifier.environment]\ncpus = 1\n`,
        }),
      ),
    );
    expect(shared.path).toBe('verifier.environment');
    const composed = await writeTask(r, 'composed', { toml: `[environment]\ndocker_image = "x"\n[verifier]\nenvironment_mode = "separate"\n` });
    await writeFile(join(composed, 'tests', 'docker-compose.yaml'), 'services: {}\n');
    expect((await configErrorOf(loadHarborTask(composed))).path).toBe('tests/docker-compose.yaml');
    const bad = await configErrorOf(
      loadHarborTask(await writeTask(r, 'bad', { toml: `[environment]\ndocker_image = "x"\n[verifier.environment]\ncpus = "two"\n` })),
    );
    expect(bad.path).toBe('verifier.environment.cpus');
  });

  it('invalid TOML is a ConfigError naming the file and the line', async () => {
    const dir = await writeTask(await root(), 'bad-toml', { toml: '[environment\ndocker_image = "x"\n' });
    const error = await configErrorOf(loadHarborTask(dir));
    expect(error.path).toBe('task.toml');
    expect(error.message).toContain(join(dir, 'task.toml'));
    expect(error.message).toMatch(/not valid TOML/);
    expect(error.message).toMatch(/line 1/i);
    expect(error.cause).toBeInstanceOf(Error);
  });

  it('a task without tests/test.sh loads with that problem (a trial ends in a TaskDefinitionError naming it, the rest of a dataset runs)', async () => {
    const dir = await writeTask(await root(), 'no-tests', { test: null });
    const task = await loadHarborTask(dir);
    expect(task.problems).toEqual([{ path: 'tests/test.sh', message: expect.stringContaining('there is no tests/test.sh') }]);
  });

  it('CRLF scripts are problems of the task (solve.sh for the oracle only), not notes', async () => {
    const dir = await writeTask(await root(), 'crlf', { test: '#!/bin/sh\r\necho 1 > /logs/verifier/reward.txt\r\n' });
    await mkdir(join(dir, 'solution'), { recursive: true });
    await writeFile(join(dir, 'solution', 'solve.sh'), '#!/bin/sh\r\ntrue\r\n');
    const task = await loadHarborTask(dir);
    expect(task.problems?.map((p) => [p.path, p.oracleOnly ?? false])).toEqual([
      ['tests/test.sh', false],
      ['solution/solve.sh', true],
    ]);
    expect(task.problems?.[0]?.message).toMatch(/CRLF.*dos2unix/);
    expect(task.notes.join('\n')).not.toMatch(/CRLF/);
  });

  it('a directory without task.toml, or no directory at all, is a ConfigError', async () => {
    const r = await root();
    await mkdir(join(r, 'empty'));
    expect((await configErrorOf(loadHarborTask(join(r, 'empty')))).message).toMatch(/no readable task\.toml/);
    expect((await configErrorOf(loadHarborTask(join(r, 'nope')))).message).toMatch(/does not exist/);
  });
});

describe('loadHarborTasks', () => {
  it('loads every task directory, sorted by id, skipping hidden directories and files', async () => {
    const r = await root();
    for (const id of ['b-task', 'a-task', 'c10', 'c2']) await writeTask(r, id);
    await mkdir(join(r, '.git'));
    await writeFile(join(r, 'README.md'), 'a dataset');
    const tasks = await loadHarborTasks(r);
    expect(tasks.map((t) => t.id)).toEqual(['a-task', 'b-task', 'c10', 'c2']);
  });

  it('a task directory is a dataset of one', async () => {
    const dir = await writeTask(await root(), 'alone');
    expect((await loadHarborTasks(dir)).map((t) => t.id)).toEqual(['alone']);
  });

  it('never skips a broken task silently: one error as is, several listed together', async () => {
    const r = await root();
    await writeTask(r, 'good');
    await writeTask(r, 'bad-toml', { toml: 'not toml at all [' });
    const one = await configErrorOf(loadHarborTasks(r));
    expect(one.path).toBe('task.toml');
    await writeTask(r, 'bad-toml-2', { toml: '[environment\n' });
    const several = await configErrorOf(loadHarborTasks(r));
    expect(several.message).toMatch(/2 of 3 tasks/);
    expect(several.message).toContain('bad-toml-2');
    expect(several.message).toContain('bad-toml');
  });

  it('an empty or missing dataset is a ConfigError', async () => {
    const r = await root();
    expect((await configErrorOf(loadHarborTasks(r))).message).toMatch(/no task directories/);
    expect((await configErrorOf(loadHarborTasks(join(r, 'missing')))).message).toMatch(/does not exist/);
  });

  it('loads the example tasks shipped with the repository', async () => {
    const tasks = await loadHarborTasks(new URL('../../../examples/tasks', import.meta.url).pathname);
    expect(tasks.map((t) => t.id)).toContain('hello-world');
    expect(tasks.every((t) => t.solutionDir !== undefined)).toBe(true);
    // Nothing to say about the examples on every run, and nothing wrong with them.
    expect(tasks.map((t) => [t.id, t.notes, t.problems ?? []])).toEqual(tasks.map((t) => [t.id, [], []]));
  });
});

describe('parseSizeToMb', () => {
  it.each([
    ['2G', 2048],
    ['2g', 2048],
    ['2GB', 2048],
    ['2Gi', 2048],
    ['512M', 512],
    ['512MiB', 512],
    ['1.5G', 1536],
    ['1T', 1024 * 1024],
    ['1536K', 2],
    [' 4G ', 4096],
  ])('%s is %i MiB', (text, mb) => {
    expect(parseSizeToMb(text)).toBe(mb);
  });

  it.each(['2', '', 'G', '-1G', '0G', '2X', '2 G B', 'lots'])('refuses %j', (text) => {
    expect(parseSizeToMb(text)).toBeUndefined();
  });
});
