// What harbor sees when the infrastructure fails under it: a sandbox killed mid-trial is berth's
// SandboxLostError under a name harbor retries (and, retried, the trial is scored); harbor killed
// with SIGKILL leaves nothing running.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURES, harborContainers, harborRun, jobResult, outcomes, solving, trials } from './support/harbor.js';

const run = promisify(execFile);
let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'berth-harbor-faults-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('harbor on berth, when the infrastructure fails', () => {
  it("a sandbox killed mid-trial: without retries harbor records berth's SandboxLostError as a RuntimeRequestError; with --max-retries 1 the trial is retried and scored", async () => {
    const jobs = join(root, 'jobs');
    const once = harborRun(FIXTURES, jobs, 'killed', { backend: 'docker' }, { args: ['-i', 'slow'] });
    await run('docker', ['kill', await solving()]);
    expect((await once).code).toBe(0);
    const [lost] = [...trials(join(jobs, 'killed')).values()];
    expect(lost?.exception_info).toMatchObject({
      exception_type: 'RuntimeRequestError',
      exception_message: expect.stringMatching(/^\[berth SandboxLostError\] sandbox .* was lost/),
    });
    expect(lost?.verifier_result).toBeNull();

    const retried = harborRun(FIXTURES, jobs, 'retried', { backend: 'docker' }, { args: ['-i', 'slow', '--max-retries', '1'] });
    await run('docker', ['kill', await solving()]);
    expect((await retried).code).toBe(0);
    expect(outcomes(join(jobs, 'retried'))).toEqual({ slow: 1 });
    expect(jobResult(join(jobs, 'retried')).stats.n_retries).toBe(1);
    expect(await harborContainers()).toEqual([]);
  }, 300_000);

  it("berth's process killed mid-trial: the trial gets a retryable RuntimeRequestError at once, and berth's guardian removes the sandbox", async () => {
    let pid = 0;
    const jobs = join(root, 'jobs');
    const running = harborRun(FIXTURES, jobs, 'berth-killed', { backend: 'docker' }, { args: ['-i', 'slow'], onStart: (child) => (pid = child.pid ?? 0) });
    const sandbox = await solving();
    const { stdout } = await run('ps', ['-o', 'pid=,args=', '--ppid', String(pid)]);
    const serve = stdout.split('\n').find((line) => line.includes('serve --stdio'));
    expect(serve, stdout).toBeDefined();
    process.kill(Number.parseInt(serve!.trim(), 10), 'SIGKILL');
    expect((await running).code).toBe(0);
    const [trial] = [...trials(join(jobs, 'berth-killed')).values()];
    expect(trial?.exception_info).toMatchObject({ exception_type: 'RuntimeRequestError', exception_message: expect.stringMatching(/berth process .* exited/) });
    let left = await harborContainers();
    for (let i = 0; i < 60 && left.includes(sandbox); i++) {
      await new Promise((r) => setTimeout(r, 500));
      left = await harborContainers();
    }
    expect(left).not.toContain(sandbox);
  }, 300_000);

  it('harbor killed with SIGKILL mid-trial: its berth process sees stdin end and removes the sandbox within 30 s', async () => {
    let pid = 0;
    const killed = harborRun(
      FIXTURES,
      join(root, 'jobs'),
      'sigkill',
      { backend: 'docker' },
      { args: ['-i', 'slow'], onStart: (child) => (pid = child.pid ?? 0) },
    );
    const sandbox = await solving();
    expect(await harborContainers()).toContain(sandbox);
    process.kill(pid, 'SIGKILL');
    expect((await killed).signal).toBe('SIGKILL');
    let left = await harborContainers();
    for (let i = 0; i < 60 && left.length > 0; i++) {
      await new Promise((r) => setTimeout(r, 500));
      left = await harborContainers();
    }
    expect(left).toEqual([]);
  }, 300_000);
});
