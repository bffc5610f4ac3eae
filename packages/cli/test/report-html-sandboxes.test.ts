// Sandbox accounting from real runs on the Docker engine (issue 20, item 5). A normal run: every
// attempt's container created and removed (created == removed == attempts, one of them a retry of
// a container killed under its attempt). A run that leaves one behind: the backend is wrapped so
// that one task's teardown rejects without asking the engine for anything, so its container really
// stays; report.json must count it and name it, report.html and `berth report` must say so, and a
// task whose image cannot be pulled must not count as created. The test removes the container.
// The normal run's starts are timed too: report.json's startPhases, report.html's table and
// `berth report`'s (issue 31).
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDockerBackend } from '@berth/backend-docker';
import type { Backend, Environment } from '@berth/core';
import { runHarborJob, type AttemptResultFile, type HarborJobReport } from '@berth/harbor';
import { loadJob } from '../src/job/job-data.js';
import { renderReportHtml } from '../src/report/html.js';
import { berth } from './support/berth-bin.js';
import { writeDataset } from './support/dataset.js';

const docker = new Docker();
/** In the test registry, which holds no such repository: the pull fails before any container is asked for. */
const MISSING_IMAGE = '127.0.0.1:5000/berth/no-such-image:accounting';
const LEAKY = 'leaky';
const SECRET = 'token=accounting-secret-42';

let root: string;
/** Containers this file left on purpose: removed in afterAll whatever happened. */
const leftBehind: string[] = [];

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'berth-cli-sandboxes-'));
});

afterAll(async () => {
  for (const id of leftBehind)
    await docker
      .getContainer(id)
      .remove({ force: true })
      .catch(() => undefined);
  if (root) await rm(root, { recursive: true, force: true });
});

/** A backend whose environments for `taskId` fail their teardown without calling the real one. */
function leakingTeardownOf(backend: Backend, taskId: string): Backend {
  const wrap = (env: Environment): Environment => {
    if (env.spec.labels['berth.task'] !== taskId) return env;
    const teardown = async () => {
      leftBehind.push(env.id);
      throw new Error(`the engine would not remove ${env.id}: ${SECRET}`);
    };
    return new Proxy(env, {
      get(target, key) {
        if (key === 'teardown') return teardown;
        const value: unknown = Reflect.get(target, key, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  };
  return new Proxy(backend, {
    get(target, key) {
      if (key === 'environment') return (spec: Parameters<Backend['environment']>[0]) => wrap(target.environment(spec));
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

async function exists(containerId: string): Promise<boolean> {
  return docker
    .getContainer(containerId)
    .inspect()
    .then(
      () => true,
      () => false,
    );
}

async function readReport(jobDir: string): Promise<HarborJobReport> {
  return JSON.parse(await readFile(join(jobDir, 'report.json'), 'utf8')) as HarborJobReport;
}

describe('sandbox accounting of a normal Docker run', () => {
  it('created == removed == attempts, a retried attempt included', async () => {
    const tasksDir = await writeDataset(join(root, 'normal-tasks'), [
      { id: 'pass-one', kind: 'pass' },
      { id: 'killed-once', kind: 'pass' },
    ]);
    const jobDir = join(root, 'normal-job');
    const made: string[] = [];
    await runHarborJob({
      tasksDir,
      backend: createDockerBackend(),
      jobDir,
      maxAttempts: 2,
      backoff: { initialMs: 50, maxMs: 100 },
      hooks: {
        async afterStart(env, task, ctx) {
          made.push(env.id);
          // Its first container dies under it: transient, retried, a second container.
          if (task.id !== 'killed-once' || ctx.attempt !== 1) return;
          const container = docker.getContainer(env.id);
          await container.kill();
          await container.wait();
        },
      },
    });
    const { report } = await readReport(jobDir);
    expect(report.attempts).toBe(3);
    expect(report.sandboxes).toEqual({ created: 3, removed: 3, notRemoved: [] });
    for (const id of made) expect(await exists(id), id).toBe(false);

    // Each attempt's start timed (issue 31): report.json's startPhases counts the three starts in every
    // phase Docker reports but the first command, which the container killed right after its start
    // never ran; report.html and `berth report` show them.
    const phases = report.startPhases?.docker;
    for (const phase of ['admitted', 'pulled', 'accepted', 'running'] as const) expect(phases?.[phase]?.count, phase).toBe(3);
    expect(phases?.firstCommand?.count).toBe(2);
    expect(Object.keys(phases ?? {})).toEqual(['admitted', 'accepted', 'pulled', 'running', 'firstCommand']);
    const html = renderReportHtml(await loadJob(jobDir));
    expect(html).toContain('<tr data-backend="docker" data-phase="pulled">');
    expect(html).toContain(`<span data-metric="startPhases.docker.running.p95">${phases!.running!.p95}</span>`);
    const shown = await berth(['report', jobDir, '--no-html']);
    expect(shown.stdout).toMatch(/\nsandbox start phases\nBACKEND +PHASE +STARTS +P50 +P95 +P99 +TIME\ndocker +admitted +3 +/);
    expect(shown.stdout).toMatch(/\ndocker +firstCommand +2 +\S+ (ms|s) +\S+ (ms|s) +\S+ (ms|s) +until the first command started\n/);
  }, 180_000);
});

describe('sandbox accounting of a Docker run that leaves a container behind', () => {
  let jobDir: string;
  let jobReport: HarborJobReport;
  let leakedId: string;

  beforeAll(async () => {
    const tasksDir = await writeDataset(join(root, 'leak-tasks'), [
      { id: 'pass-one', kind: 'pass' },
      { id: LEAKY, kind: 'pass' },
      { id: 'unpullable', kind: 'pass', image: MISSING_IMAGE },
    ]);
    // No credentials from anywhere: the pull is refused by the registry, whatever this machine has.
    const dockerConfig = join(root, 'docker-config');
    await mkdir(dockerConfig);
    jobDir = join(root, 'leak-job');
    await runHarborJob({
      tasksDir,
      backend: leakingTeardownOf(createDockerBackend({ dockerConfigEnv: { DOCKER_CONFIG: dockerConfig } }), LEAKY),
      jobDir,
      maxAttempts: 1,
    });
    jobReport = await readReport(jobDir);
    leakedId = leftBehind[0]!;
  }, 180_000);

  it('really left the container, and report.json counts and names it, its secret redacted', async () => {
    expect(leakedId).toBeDefined();
    expect(await exists(leakedId)).toBe(true);
    // pass-one and leaky made containers; the unpullable image made none.
    expect(jobReport.report.sandboxes).toEqual({
      created: 2,
      removed: 1,
      notRemoved: [{ id: leakedId, taskId: LEAKY, attempt: 1, backend: 'docker', error: `the engine would not remove ${leakedId}: token=[REDACTED]` }],
    });
    expect(JSON.stringify(jobReport)).not.toContain('accounting-secret-42');
    expect(jobReport.tasks.find((t) => t.taskId === 'unpullable')).toMatchObject({ status: 'infra_failed', failureType: 'ImagePullError' });
    // The attempt itself still counts: a failed teardown is recorded beside its result, not instead of it.
    expect(jobReport.tasks.find((t) => t.taskId === LEAKY)).toMatchObject({ status: 'rewarded', reward: 1 });
    const result = JSON.parse(await readFile(join(jobDir, LEAKY, 'attempt-1', 'result.json'), 'utf8')) as AttemptResultFile;
    expect(result.environmentId).toBe(leakedId);
    expect(result.teardownError?.message).toContain('would not remove');
  });

  it('report.html names it under the headline', async () => {
    const html = renderReportHtml(await loadJob(jobDir));
    const section = /<section class="card leak" id="sandboxes-left"[\s\S]*?<\/section>/.exec(html)?.[0] ?? '';
    expect(section).toContain('<span data-metric="sandboxes.notRemoved.length">1</span> sandbox not removed');
    expect(section).toContain(`<tr data-sandbox="${leakedId}" data-task="${LEAKY}" data-attempt="1"><td><code>${leakedId}</code></td><td>docker</td>`);
    expect(section).toContain('token=[REDACTED]');
    expect(html).toContain('<span data-metric="sandboxes.created">2</span>');
    expect(html).toContain('<span data-metric="sandboxes.removed">1</span> removed');
  });

  it('berth report says so, names it and points to berth sweep', async () => {
    const out = join(root, 'leak-report.html');
    const run = await berth(['report', jobDir, '--out', out]);
    expect(run.stderr).toBe('');
    expect(run.stdout).toContain(
      `sandboxes: 2 created, 1 removed, 1 NOT removed:\n  - ${leakedId} (docker) · task ${LEAKY}, attempt 1: the engine would not remove`,
    );
    expect(run.stdout).toContain('`berth sweep` removes them');
    expect(await readFile(out, 'utf8')).toContain(`data-sandbox="${leakedId}"`);
  });
});
