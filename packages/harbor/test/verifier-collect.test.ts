// harbor's `[[verifier.collect]]` on real engines: after the agent, in the agent's sandbox, on the
// environment's network, before the artifacts are copied out and before the verifier (which sees
// what they made, in its own sandbox too); a command that fails or times out changes nothing else.
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createDockerBackend } from '@berth/backend-docker';
import { createK8sBackend } from '@berth/backend-k8s';
import { runHarborJob, type AttemptResultFile } from '@berth/harbor';
import { BERTH_KUBECONFIG, TOLERATE_FAULT } from '@berth/test-support/kube-cluster';
import { BASIC_IMAGE, removeBuiltImages, tempDir, writeTask } from './support.js';

const dirs: string[] = [];
const contexts: string[] = [];
afterAll(async () => {
  await removeBuiltImages(contexts);
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

async function dataset(id: string, files: { toml: string; solve: string; test: string; dockerfile?: string }) {
  const base = await tempDir('collect');
  dirs.push(base);
  const root = join(base, 'tasks');
  const dir = await writeTask(root, id, files);
  if (files.dockerfile !== undefined) {
    await mkdir(join(dir, 'environment'), { recursive: true });
    await writeFile(join(dir, 'environment', 'Dockerfile'), files.dockerfile);
    contexts.push(join(dir, 'environment'));
  }
  const jobDir = join(base, 'job');
  const attempt = join(jobDir, id, 'attempt-1');
  return {
    root,
    jobDir,
    read: (file: string) => readFile(join(attempt, file), 'utf8'),
    result: async () => JSON.parse(await readFile(join(attempt, 'result.json'), 'utf8')) as AttemptResultFile,
  };
}

/** A `bash` that says it ran (harbor runs collect commands with bash), then is sh. */
const WITH_BASH = `FROM ${BASIC_IMAGE}
RUN mkdir -p /app && printf '#!/bin/sh\\necho bash > /tmp/shell-used\\nexec sh "$@"\\n' > /bin/bash && chmod 755 /bin/bash
`;

const SHARED_TOML = `artifacts = ["/app/out"]
[agent]
timeout_sec = 60
network_mode = "no-network"
[verifier]
timeout_sec = 60
network_mode = "no-network"
[environment]
workdir = "/app"
network_mode = "public"
[[verifier.collect]]
command = "cp work.txt /logs/artifacts/snapshot.txt && id -u > /logs/artifacts/uid-1.txt && ls /sys/class/net > /logs/artifacts/net.txt && cp /tmp/shell-used /logs/artifacts/shell.txt"
timeout_sec = 30
[[verifier.collect]]
command = "id -u > /logs/artifacts/uid-2.txt"
user = 1000
[[verifier.collect]]
command = "echo broken >&2; exit 3"
[[verifier.collect]]
command = "sleep 30"
timeout_sec = 1
[[verifier.collect]]
command = "mkdir -p out && echo last > out/last.txt"
`;
const SOLVE = '#!/bin/sh\necho work > /app/work.txt\n';
/** Shared sandbox: the verifier sees what the collect commands made. */
const TEST = `#!/bin/sh
[ "$(cat /logs/artifacts/snapshot.txt)" = work ] && [ -f /app/out/last.txt ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt
`;

describe('[[verifier.collect]] on Docker', () => {
  it("runs each command after the agent, on the environment's network, as its user, with bash; failures and timeouts are recorded and change nothing", async () => {
    const t = await dataset('collect-shared', { toml: SHARED_TOML, solve: SOLVE, test: TEST, dockerfile: WITH_BASH });
    const report = await runHarborJob({ tasksDir: t.root, backend: createDockerBackend(), jobDir: t.jobDir });
    expect(report.tasks[0]).toMatchObject({ status: 'scored', outcome: { reward: 1 } });

    const result = await t.result();
    const steps = result.steps.map((s) => s.name);
    const at = (name: string) => steps.indexOf(name);
    expect(at('download agent logs')).toBeLessThan(at('collect 1'));
    expect(steps.slice(at('collect 1'), at('collect 5') + 1)).toEqual(['collect 1', 'collect 2', 'collect 3', 'collect 4', 'collect 5']);
    expect(at('collect 5')).toBeLessThan(at('verifier'));
    expect(result.steps.find((s) => s.name === 'collect 3')).toMatchObject({ ended: 'completed', exitCode: 3, timedOut: false });
    expect(result.steps.find((s) => s.name === 'collect 4')).toMatchObject({ ended: 'timed_out', timedOut: true });
    expect(result.collect).toMatchObject([
      { exitCode: 0 },
      { user: '1000', exitCode: 0 },
      { exitCode: 3 },
      { command: 'sleep 30', timedOut: true },
      { exitCode: 0 },
    ]);
    expect(result.collect?.every((c) => c.error === undefined)).toBe(true);
    expect(await t.read('collect/3-stderr.txt')).toBe('broken\n');

    // Made by the commands and copied out as artifacts.
    expect(await t.read('artifacts/snapshot.txt')).toBe('work\n');
    expect(await t.read('artifacts/uid-1.txt')).toBe('0\n'); // the image's user
    expect(await t.read('artifacts/uid-2.txt')).toBe('1000\n');
    expect(await t.read('artifacts/shell.txt')).toBe('bash\n');
    expect(await t.read('artifacts/out/last.txt')).toBe('last\n'); // relative to the workdir
    // Between the agent's and the verifier's no-network phases: the environment's (public) network.
    expect((await t.read('artifacts/net.txt')).split('\n').filter((n) => /^eth/.test(n))).not.toEqual([]);
  });

  it("a separate verifier gets what the commands made, through the artifacts, after the agent's sandbox is gone (harbor's deep-swe layout)", async () => {
    // As corpus task 06: a patch of the agent's work made by a collect command, judged in a sandbox without that work.
    const toml = `artifacts = ["/logs/artifacts/model.patch"]
[agent]
timeout_sec = 60
network_mode = "no-network"
[verifier]
timeout_sec = 60
network_mode = "no-network"
environment_mode = "separate"
[verifier.environment]
network_mode = "no-network"
cpus = 1
[environment]
docker_image = "${BASIC_IMAGE}"
network_mode = "no-network"
[[verifier.collect]]
command = "cd /app && diff -u base.txt work.txt > /logs/artifacts/model.patch; test -s /logs/artifacts/model.patch"
timeout_sec = 300.0
`;
    const solve = '#!/bin/sh\nmkdir -p /app && echo before > /app/base.txt && echo after > /app/work.txt\n';
    const test = `#!/bin/sh
[ ! -e /app/work.txt ] && grep -q '^+after' /logs/artifacts/model.patch && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt
`;
    const t = await dataset('collect-separate', { toml, solve, test });
    const report = await runHarborJob({ tasksDir: t.root, backend: createDockerBackend(), jobDir: t.jobDir });
    expect(report.tasks[0]).toMatchObject({ status: 'scored', outcome: { reward: 1 } });

    const result = await t.result();
    const steps = result.steps.map((s) => s.name);
    expect(steps.indexOf('collect 1')).toBeGreaterThan(steps.indexOf('agent'));
    expect(steps.indexOf('collect 1')).toBeLessThan(steps.indexOf('artifacts'));
    expect(steps.indexOf('artifacts')).toBeLessThan(steps.indexOf('start verifier'));
    expect(result.collect).toEqual([{ command: expect.stringContaining('diff -u'), exitCode: 0 }]);
    expect(await t.read('artifacts/model.patch')).toMatch(/^\+after$/m);
    // The entry inside /logs/artifacts is the convention copy's file, not downloaded a second time.
    expect(result.artifacts).toEqual([
      { source: '/logs/artifacts', destination: 'artifacts', status: 'copied' },
      { source: '/logs/artifacts/model.patch', destination: join('artifacts', 'model.patch'), status: 'copied' },
    ]);
  });
});

describe('[[verifier.collect]] on Kubernetes', () => {
  it('runs the same way on the test cluster: before the verifier, a failing command recorded', { timeout: 180_000 }, async () => {
    const toml = `artifacts = ["/app/out"]
[agent]
timeout_sec = 60
[verifier]
timeout_sec = 60
[environment]
docker_image = "${BASIC_IMAGE}"
workdir = "/app"
[[verifier.collect]]
command = "echo broken >&2; exit 3"
[[verifier.collect]]
command = "cp work.txt /logs/artifacts/snapshot.txt && mkdir -p out && echo last > out/last.txt"
`;
    const t = await dataset('collect-k8s', { toml, solve: SOLVE, test: TEST });
    const backend = createK8sBackend({ kubeconfig: { file: BERTH_KUBECONFIG }, tolerations: TOLERATE_FAULT });
    const report = await runHarborJob({ tasksDir: t.root, backend, jobDir: t.jobDir });
    expect(report.tasks[0]).toMatchObject({ status: 'scored', outcome: { reward: 1 } });

    const result = await t.result();
    expect(result.backend).toBe('k8s');
    expect(result.collect).toMatchObject([{ exitCode: 3 }, { exitCode: 0 }]);
    expect(await t.read('collect/1-stderr.txt')).toBe('broken\n');
    expect(await t.read('artifacts/snapshot.txt')).toBe('work\n');
    expect(await t.read('artifacts/out/last.txt')).toBe('last\n');
  });
});
