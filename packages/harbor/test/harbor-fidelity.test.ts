// Harbor's semantics reaching the sandbox, on the real engine: images built from the task's
// Dockerfile (once), users, env tables, per-phase networks, workdir, artifacts, healthchecks.
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import type { Backend, EnvironmentPhase } from '@berth/core';
import { createDockerBackend } from '@berth/backend-docker';
import { loadHarborTask, runHarborJob, type AttemptResultFile } from '@berth/harbor';
import { BASIC_IMAGE, removeBuiltImages, tempDir, writeTask } from './support.js';

const docker = new Docker();
const dirs: string[] = [];
const contexts: string[] = [];
afterAll(async () => {
  await removeBuiltImages(contexts);
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

/** A backend that records the phases of every sandbox it makes (to see whether a build ran). */
function recording(real: Backend, phases: EnvironmentPhase[]): Backend {
  return new Proxy(real, {
    get(target, prop) {
      if (prop === 'environment') {
        return (spec: Parameters<Backend['environment']>[0]) => {
          const env = target.environment(spec);
          env.events.on('phase', (p) => phases.push(p));
          return env;
        };
      }
      const value: unknown = Reflect.get(target, prop);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

const DOCKERFILE = `FROM ${BASIC_IMAGE}
RUN mkdir -p /app && echo 'agent:x:1000:1000::/app:/bin/sh' >> /etc/passwd && chown 1000:1000 /app
`;

const TOML = `schema_version = "1.4"
[task]
name = "berth/fidelity"
[agent]
timeout_sec = 60
user = "agent"
network_mode = "no-network"
[verifier]
timeout_sec = 60
network_mode = "public"
[verifier.env]
CHECK_MODE = "strict"
[solution.env]
SOLUTION_TOKEN = "\${BERTH_FIDELITY_TOKEN}"
[environment]
network_mode = "no-network"
workdir = "/app"
build_timeout_sec = 120
[environment.env]
GREETING = "\${BERTH_FIDELITY_GREETING:-hello}"
[[artifacts]]
source = "out"
`;

const SOLVE = `#!/bin/sh
{ echo "uid=$(id -u)"; echo "pwd=$(pwd)"; echo "greeting=$GREETING"; echo "token=$SOLUTION_TOKEN"; echo "check=\${CHECK_MODE:-unset}"
  echo "ifaces=$(ls /sys/class/net | tr '\\n' ' ')"; echo "frontend=$DEBIAN_FRONTEND"; } > /app/agent-saw.txt
mkdir -p /app/out && echo artifact > /app/out/result.txt
`;

const TEST = `#!/bin/sh
{ cat /app/agent-saw.txt; echo "v_uid=$(id -u)"; echo "v_pwd=$(pwd)"; echo "v_greeting=$GREETING"; echo "v_check=$CHECK_MODE"
  echo "v_token=\${SOLUTION_TOKEN:-unset}"; echo "v_ifaces=$(ls /sys/class/net | tr '\\n' ' ')"; } > /logs/verifier/saw.txt
echo 1 > /logs/verifier/reward.txt
`;

const TOKEN = 'tok-fidelity-0123456789';

async function datasetWith(
  id: string,
  files: { toml: string; dockerfile?: string; solve?: string; test?: string; extra?: Record<string, string> },
): Promise<{ root: string; dir: string }> {
  const base = await tempDir('fidelity');
  dirs.push(base);
  const root = join(base, 'tasks');
  const dir = await writeTask(root, id, { toml: files.toml, solve: files.solve ?? SOLVE, test: files.test ?? TEST });
  await mkdir(join(dir, 'environment'), { recursive: true });
  if (files.dockerfile !== undefined) {
    await writeFile(join(dir, 'environment', 'Dockerfile'), files.dockerfile);
    contexts.push(join(dir, 'environment'));
  }
  for (const [name, text] of Object.entries(files.extra ?? {})) await writeFile(join(dir, 'environment', name), text);
  return { root, dir };
}

function saw(text: string): Record<string, string> {
  return Object.fromEntries(
    text
      .trim()
      .split('\n')
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1).trim()]),
  );
}

describe('harbor fidelity on Docker', () => {
  it('builds the Dockerfile, runs each phase as harbor does (user, env, network, workdir), keeps artifacts; the second run does not build', async () => {
    const { root } = await datasetWith('fidelity', { toml: TOML, dockerfile: DOCKERFILE });
    const phases: EnvironmentPhase[] = [];
    const backend = recording(createDockerBackend(), phases);
    const jobDir = join(root, '..', 'job');
    const report = await runHarborJob({ tasksDir: root, backend, jobDir, hostEnv: { BERTH_FIDELITY_TOKEN: TOKEN } });
    expect(report.tasks[0]).toMatchObject({ status: 'scored', outcome: { reward: 1 } });
    expect(phases).toContain('building');

    const attempt = join(jobDir, 'fidelity', 'attempt-1');
    const seen = saw(await readFile(join(attempt, 'verifier', 'saw.txt'), 'utf8'));
    // The oracle: the agent's user, the workdir, [environment.env] and [solution.env], no network, not the verifier's env.
    expect(seen).toMatchObject({ uid: '1000', pwd: '/app', greeting: 'hello', token: TOKEN, check: 'unset', ifaces: 'lo', frontend: 'noninteractive' });
    // The verifier: the image's user (root), the workdir, [verifier.env], the public network, not the solution's env.
    expect(seen).toMatchObject({ v_uid: '0', v_pwd: '/app', v_greeting: 'hello', v_check: 'strict', v_token: 'unset' });
    expect(seen.v_ifaces?.split(' ')).toContain('eth0');
    expect(await readFile(join(attempt, 'artifacts', 'out', 'result.txt'), 'utf8')).toBe('artifact\n');

    const text = await readFile(join(attempt, 'result.json'), 'utf8');
    expect(text).not.toContain(TOKEN); // names only, never values
    const result = JSON.parse(text) as AttemptResultFile;
    expect(result.environment).toMatchObject({
      image: { build: { dockerfile: 'Dockerfile', timeoutSec: 120 } },
      network: { environment: 'none', agent: 'none', verifier: 'public', switched: true },
      env: { environment: ['GREETING'], verifier: ['CHECK_MODE'], solution: ['SOLUTION_TOKEN'] },
      users: { agent: 'agent' },
      workdir: '/app',
      timeouts: { agentSec: 60, verifierSec: 60, buildSec: 120 },
    });
    expect(result.image).toMatch(/^berth-build:|built from/);
    expect(result.artifacts).toEqual(expect.arrayContaining([{ source: '/app/out', destination: join('artifacts', 'out'), status: 'copied' }]));

    // Again, in a new job: the image is there, nothing is built.
    phases.length = 0;
    const again = await runHarborJob({ tasksDir: root, backend, jobDir: join(root, '..', 'job-2'), hostEnv: { BERTH_FIDELITY_TOKEN: TOKEN } });
    expect(again.tasks[0]).toMatchObject({ status: 'scored', outcome: { reward: 1 } });
    expect(phases).toContain('running');
    expect(phases).not.toContain('building');
  });

  it('a broken Dockerfile step is a permanent ImageBuildError naming the step: infra_failed, not retried, never a zero', async () => {
    const { root } = await datasetWith('broken', {
      toml: '[environment]\nnetwork_mode = "no-network"\n',
      dockerfile: `FROM ${BASIC_IMAGE}\nRUN echo "cannot fetch deps" >&2 && exit 7\n`,
    });
    const jobDir = join(root, '..', 'job');
    const report = await runHarborJob({ tasksDir: root, backend: createDockerBackend(), jobDir, maxAttempts: 3 });
    expect(report.tasks[0]).toMatchObject({ status: 'infra_failed' });
    expect(report.tasks[0]!.attempts).toHaveLength(1);
    const result = JSON.parse(await readFile(join(jobDir, 'broken', 'attempt-1', 'result.json'), 'utf8')) as AttemptResultFile;
    expect(result.failure).toMatchObject({ category: 'permanent_infra', type: 'ImageBuildError' });
    expect(result.failure?.error.details).toMatchObject({ reason: 'step_failed', step: expect.stringMatching(/^Step 2\/\d+ : RUN echo "cannot fetch deps"/) });
    expect(result.failure?.message).toContain('cannot fetch deps');
  });

  it("a separate verifier runs in a sandbox of its own, holding only the agent's artifacts; tests from its image or uploaded", async () => {
    const solve =
      '#!/bin/sh\nmkdir -p /app/out && echo answer > /app/out/answer.txt && echo scratch > /app/scratch.txt && echo note > /logs/artifacts/note.txt\n';
    const test = `#!/bin/sh
ok=1
[ "$(cat /app/out/answer.txt)" = answer ] || ok=0
[ -e /app/scratch.txt ] && ok=0
[ "$(cat /logs/artifacts/note.txt)" = note ] || ok=0
[ "$JUDGE" = "\${EXPECT_JUDGE:-}" ] || ok=0
echo "pwd=$(pwd)" > /logs/verifier/where.txt
echo $ok > /logs/verifier/reward.txt
`;
    const common = `artifacts = ["/app/out"]\n[agent]\ntimeout_sec = 60\n[environment]\ndocker_image = "${BASIC_IMAGE}"\nnetwork_mode = "no-network"\n`;
    const bundled = await datasetWith('bundled', {
      toml: `${common}[verifier]\ntimeout_sec = 60\nenvironment_mode = "separate"\n[verifier.env]\nEXPECT_JUDGE = "verifier-sandbox"\n[verifier.environment]\nnetwork_mode = "no-network"\nworkdir = "/tests"\n[verifier.environment.env]\nJUDGE = "verifier-sandbox"\n`,
      solve,
      test,
    });
    // The verifier's image carries the tests (harbor: tests/Dockerfile, context tests/).
    await writeFile(join(bundled.dir, 'tests', 'Dockerfile'), `FROM ${BASIC_IMAGE}\nCOPY test.sh /tests/test.sh\n`);
    contexts.push(join(bundled.dir, 'tests'));
    const plainRoot = join(bundled.root);
    await writeTask(plainRoot, 'plain', { toml: `${common}[verifier]\ntimeout_sec = 60\nenvironment_mode = "separate"\n`, solve, test });

    const jobDir = join(bundled.root, '..', 'job');
    const run = await runHarborJob({ tasksDir: bundled.root, backend: createDockerBackend(), jobDir });
    for (const record of run.tasks) expect(record, record.taskId).toMatchObject({ status: 'scored', outcome: { reward: 1 } });
    // Two sandboxes per attempt (the agent's, the verifier's), each counted and removed.
    expect(run.report.sandboxes).toEqual({ created: 4, removed: 4, notRemoved: [] });

    const resultOf = async (id: string) => JSON.parse(await readFile(join(jobDir, id, 'attempt-1', 'result.json'), 'utf8')) as AttemptResultFile;
    const b = await resultOf('bundled');
    const steps = b.steps.map((step) => step.name);
    expect(steps.indexOf('teardown')).toBeLessThan(steps.indexOf('start verifier')); // the agent's sandbox is gone first
    expect(steps).toContain('restore artifacts');
    expect(steps).not.toContain('upload tests');
    expect(steps.at(-1)).toBe('teardown verifier');
    expect(b.verifierEnvironmentId).toMatch(/^berth-/);
    expect(b.verifierEnvironmentId).not.toBe(b.environmentId);
    expect(b.environment?.verifierSandbox).toMatchObject({
      testsBundled: true,
      network: 'none',
      env: ['JUDGE'],
      workdir: '/tests',
      image: { build: { dockerfile: 'Dockerfile' } },
    });
    expect(await readFile(join(jobDir, 'bundled', 'attempt-1', 'verifier', 'where.txt'), 'utf8')).toBe('pwd=/tests\n');
    for (const id of [b.environmentId!, b.verifierEnvironmentId!]) await expect(docker.getContainer(id).inspect()).rejects.toMatchObject({ statusCode: 404 });

    // No [verifier.environment], no tests/Dockerfile: the agent's image, a fresh sandbox, tests uploaded.
    const p = await resultOf('plain');
    expect(p.steps.map((step) => step.name)).toContain('upload tests');
    expect(p.environment?.verifierSandbox).toMatchObject({ testsBundled: false, image: BASIC_IMAGE });
  });

  it("a prebuilt task's environment/ is copied into the workdir; a healthcheck that never passes is a startup failure, not a score", async () => {
    const prebuilt = await datasetWith('prebuilt', {
      toml: `[environment]\ndocker_image = "${BASIC_IMAGE}"\nnetwork_mode = "no-network"\nworkdir = "/srv"\n[environment.healthcheck]\ncommand = "test -f /srv/data.txt"\n`,
      solve: '#!/bin/sh\ntrue\n',
      test: '#!/bin/sh\n[ "$(cat data.txt)" = shipped ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n',
      extra: { 'data.txt': 'shipped' },
    });
    const ok = await runHarborJob({ tasksDir: prebuilt.root, backend: createDockerBackend(), jobDir: join(prebuilt.root, '..', 'job') });
    expect(ok.tasks[0]).toMatchObject({ status: 'scored', outcome: { reward: 1 } });

    const unhealthy = await datasetWith('unhealthy', {
      toml: `[environment]\ndocker_image = "${BASIC_IMAGE}"\nnetwork_mode = "no-network"\n[environment.healthcheck]\ncommand = "echo not yet; false"\ninterval_sec = 0.2\nretries = 2\n`,
    });
    const task = await loadHarborTask(join(unhealthy.root, 'unhealthy'));
    expect(task.healthcheck).toMatchObject({ intervalSec: 0.2, retries: 2, timeoutSec: 30 });
    const jobDir = join(unhealthy.root, '..', 'job');
    const report = await runHarborJob({ tasks: [task], backend: createDockerBackend(), jobDir, maxAttempts: 1 });
    expect(report.tasks[0]).toMatchObject({ status: 'infra_failed' });
    const result = JSON.parse(await readFile(join(jobDir, 'unhealthy', 'attempt-1', 'result.json'), 'utf8')) as AttemptResultFile;
    expect(result.failure).toMatchObject({ category: 'transient_infra', type: 'StartupTimeoutError' });
    expect(result.failure?.message).toMatch(/healthcheck \(echo not yet; false\) did not pass: 2 failure\(s\)/);
    expect(result.steps.map((s) => s.name)).not.toContain('agent');
  });
});
