// harbor 0.26 with berth's error policy (`harbor run -c error-policy.yaml`): berth's errors are
// recorded under berth's own names, one per category, and harbor acts on them as berth means them:
// a sandbox lost mid-trial (transient) is retried and the retry scored; a missing image
// (permanent) is not retried, even with retries asked for. And harbor's own schema command lists
// berth's --ek keys (options_model).
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeRegistryLogin } from '@berth/test-support/registry-login';
import { FIXTURES, HARBOR_VENV, harborContainers, harborRun, jobResult, outcomes, solving, trials, writeTask } from './support/harbor.js';

const run = promisify(execFile);
let root: string;
let policy: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'berth-harbor-policy-'));
  policy = join(root, 'error-policy.yaml');
  // As a user gets it: printed by the installed plugin.
  const { stdout } = await run(join(HARBOR_VENV, 'bin/python'), ['-m', 'berth_harbor.error_policy']);
  await writeFile(policy, stdout);
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('harbor 0.26 with berth_harbor/error-policy.yaml', () => {
  it('harbor environment schema lists every --ek key berth takes, with what it takes', async () => {
    const { stdout } = await run(join(HARBOR_VENV, 'bin/harbor'), ['environment', 'schema', 'berth_harbor:BerthEnvironment', '--json'], {
      env: { ...process.env, LITELLM_LOCAL_MODEL_COST_MAP: 'True' },
    });
    const schema = JSON.parse(stdout) as { properties: Record<string, { description?: string }> };
    expect(Object.keys(schema.properties)).toEqual(
      expect.arrayContaining(['backend', 'berth', 'pool', 'pull_policy', 'mirrors', 'egress_image', 'kubeconfig', 'namespace', 'image_pull_secrets', 'app']),
    );
    expect(schema.properties.namespace?.description).toMatch(/k8s only/);
  }, 60_000);

  it('a sandbox killed mid-trial is a BerthTransientInfraError: retried with --max-retries 1, and the retry scored', async () => {
    const jobs = join(root, 'jobs');
    const once = harborRun(FIXTURES, jobs, 'lost', { backend: 'docker' }, { args: ['-c', policy, '-i', 'slow'] });
    await run('docker', ['kill', await solving()]);
    expect((await once).code).toBe(0);
    const [lost] = [...trials(join(jobs, 'lost')).values()];
    expect(lost?.exception_info).toMatchObject({
      exception_type: 'BerthTransientInfraError',
      exception_message: expect.stringMatching(/^\[berth SandboxLostError\] sandbox .* was lost/),
    });

    const retried = harborRun(FIXTURES, jobs, 'lost-retried', { backend: 'docker' }, { args: ['-c', policy, '-i', 'slow', '--max-retries', '1'] });
    await run('docker', ['kill', await solving()]);
    expect((await retried).code).toBe(0);
    expect(outcomes(join(jobs, 'lost-retried'))).toEqual({ slow: 1 });
    expect(jobResult(join(jobs, 'lost-retried')).stats.n_retries).toBe(1);
    expect(await harborContainers()).toEqual([]);
  }, 300_000);

  it('a missing image is a BerthPermanentInfraError: not retried, though --max-retries 2 asks for retries', async () => {
    await writeTask(join(root, 'tasks'), 'missing-image', {
      image: '127.0.0.1:5000/berth/does-not-exist:nope',
      test: '#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n',
    });
    const jobs = join(root, 'jobs');
    // Logged in to the test registry: the image is missing, not refused.
    const login = { DOCKER_CONFIG: await writeRegistryLogin(join(root, 'docker-config')) };
    const result = await harborRun(join(root, 'tasks'), jobs, 'missing', { backend: 'docker' }, { args: ['-c', policy, '--max-retries', '2'], env: login });
    expect(result.code, result.output).toBe(0);
    const [missing] = [...trials(join(jobs, 'missing')).values()];
    expect(missing?.exception_info).toMatchObject({
      exception_type: 'BerthPermanentInfraError',
      exception_message: expect.stringMatching(/^\[berth ImagePullError\] pulling 127.0.0.1:5000\/berth\/does-not-exist:nope failed: .*not found/),
    });
    expect(jobResult(join(jobs, 'missing')).stats.n_retries ?? 0).toBe(0);
    expect(await harborContainers()).toEqual([]);
  }, 300_000);
});
