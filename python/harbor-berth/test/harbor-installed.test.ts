// harbor's plugin as a harbor user gets it: the wheel the project's build makes (berth bundled in,
// scripts/build-wheel.mjs), pip-installed into a fresh venv with each supported harbor version
// (from the wheelhouse test/setup/harbor.sh fills: no index, nothing fetched), and `harbor run`
// from outside the repository with only that venv and `node` on PATH: no BERTH_COMMAND, no berth
// checkout. A private image and an allowlist task on Docker (no egress image given), the test
// cluster and the Modal simulator, rewarded 1; nothing left. And a missing or too old Node.js
// stops the job before any trial, saying what to install.
import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminApi, BERTH_KUBECONFIG, NAMESPACE } from '@berth/test-support/kube-cluster';
import { ModalSimulator } from '@berth/test-support/modal-sim';
import { writeRegistryLogin } from '@berth/test-support/registry-login';
import { FIXTURES, harborContainers, harborRun, outcomes } from './support/harbor.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const STATE = process.env.BERTH_TEST_STATE ?? '/var/lib/berth-test';
const VERSIONS = ['0.25.0', '0.26.0'];
const run = promisify(execFile);

let root: string;
let wheel: string;
let dockerConfig: string;
/** A directory holding only `node` (this Node), for PATH. */
let nodeDir: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'berth-installed-'));
  dockerConfig = await writeRegistryLogin(join(root, 'docker-config'));
  nodeDir = join(root, 'node-bin');
  await mkdir(nodeDir);
  await symlink(process.execPath, join(nodeDir, 'node'));
  const { stdout } = await run(process.execPath, [join(REPO, 'scripts/build-wheel.mjs'), join(root, 'dist')], { maxBuffer: 16 * 1024 * 1024 });
  wheel = stdout.trim().split('\n').pop()!;
}, 300_000);
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A fresh venv with the wheel and harbor `version`, installed as a user would (pip resolving its dependencies), offline. */
async function freshVenv(version: string): Promise<string> {
  const python = (await readFile(join(STATE, 'harbor-python'), 'utf8')).trim();
  const venv = join(root, `venv-${version}`);
  await run(python, ['-m', 'venv', venv]);
  await run(join(venv, 'bin/pip'), [
    'install',
    '--disable-pip-version-check',
    '--quiet',
    '--no-index',
    '--find-links',
    join(STATE, 'wheelhouse'),
    wheel,
    `harbor==${version}`,
  ]);
  return venv;
}

/** What the plugin's process sees: the venv and node on PATH, and nothing pointing at a berth checkout. */
function userEnv(venv: string, extra: Record<string, string> = {}): Record<string, string | undefined> {
  return { PATH: `${join(venv, 'bin')}:${nodeDir}:/usr/sbin:/usr/bin:/sbin:/bin`, BERTH_COMMAND: undefined, NODE_OPTIONS: undefined, ...extra };
}

it('the wheel carries berth and the data files the plugin reads at run time', async () => {
  const python = (await readFile(join(STATE, 'harbor-python'), 'utf8')).trim();
  const { stdout } = await run(python, ['-c', 'import sys, zipfile; print("\\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))', wheel]);
  expect(wheel).toMatch(/\/harbor_berth-0\.1\.0-py3-none-any\.whl$/);
  expect(stdout.split('\n')).toEqual(
    expect.arrayContaining([
      'berth_harbor/bin/berth.mjs',
      'berth_harbor/capabilities.json',
      'berth_harbor/remedies.json',
      'berth_harbor/error-policy.yaml',
      'berth_harbor/environment.py',
    ]),
  );
});

describe.each(VERSIONS)('the wheel in a fresh venv with harbor %s and node', (version) => {
  let venv: string;
  beforeAll(async () => {
    venv = await freshVenv(version);
  }, 300_000);

  it("carries berth: the bundled berth runs, and its version is the wheel's", async () => {
    const { stdout } = await run(
      join(venv, 'bin/python'),
      [
        '-c',
        'import harbor, importlib.metadata as m, berth_harbor.command as c; print(m.version("harbor"), m.version("harbor-berth"), *c.berth_command(None))',
      ],
      { env: userEnv(venv) as NodeJS.ProcessEnv },
    );
    const [harborVersion, pluginVersion, node, bundle] = stdout.trim().split(' ');
    expect(harborVersion).toBe(version);
    expect(node).toBe(join(nodeDir, 'node'));
    expect(bundle).toBe(
      join(
        venv,
        'lib',
        (await run(join(venv, 'bin/python'), ['-c', 'import sys; print(f"python{sys.version_info[0]}.{sys.version_info[1]}")'])).stdout.trim(),
        'site-packages/berth_harbor/bin/berth.mjs',
      ),
    );
    const berth = await run(node!, [bundle!, '--version'], { env: userEnv(venv) as NodeJS.ProcessEnv });
    expect(berth.stdout.trim()).toBe(pluginVersion);
  }, 120_000);

  it("a --ek key that is no one's (a typo) stops the job before any trial, naming it", async () => {
    const jobs = join(root, `jobs-${version}`);
    const result = await harborRun(
      FIXTURES,
      jobs,
      'typo',
      { backend: 'docker', namspace: 'evals' },
      {
        harbor: join(venv, 'bin/harbor'),
        env: userEnv(venv),
        args: ['-i', 'private-image'],
      },
    );
    expect(result.code).toBe(1);
    expect(result.output).toMatch(/namspace/);
  }, 120_000);

  it('docker: a private image and an allowlist task (no egress image given), rewarded 1; nothing left', async () => {
    const jobs = join(root, `jobs-${version}`);
    const result = await harborRun(
      FIXTURES,
      jobs,
      'docker',
      { backend: 'docker' },
      {
        harbor: join(venv, 'bin/harbor'),
        env: userEnv(venv, { DOCKER_CONFIG: dockerConfig }),
        args: ['-i', 'private-image', '-i', 'allowlist'],
      },
    );
    expect(outcomes(join(jobs, 'docker')), result.output).toEqual({ 'private-image': 1, allowlist: 1 });
    expect(await harborContainers()).toEqual([]);
  }, 600_000);

  it('kubernetes (the test cluster): a private image and an allowlist task, rewarded 1; no pod left', async () => {
    const jobs = join(root, `jobs-${version}`);
    const result = await harborRun(
      FIXTURES,
      jobs,
      'k8s',
      { backend: 'k8s', kubeconfig: BERTH_KUBECONFIG },
      {
        harbor: join(venv, 'bin/harbor'),
        env: userEnv(venv, { DOCKER_CONFIG: dockerConfig }),
        args: ['-i', 'private-image', '-i', 'allowlist'],
      },
    );
    expect(outcomes(join(jobs, 'k8s')), result.output).toEqual({ 'private-image': 1, allowlist: 1 });
    const pods = await adminApi().listNamespacedPod({ namespace: NAMESPACE, labelSelector: 'berth.harbor' });
    expect(pods.items.map((p) => p.metadata?.name)).toEqual([]);
  }, 600_000);

  it('modal (the simulator): a private image and an allowlist task, rewarded 1', async () => {
    const sim = await ModalSimulator.start();
    try {
      const caFile = join(root, 'modal-ca.pem');
      await writeFile(caFile, sim.ca);
      const jobs = join(root, `jobs-${version}`);
      const result = await harborRun(
        FIXTURES,
        jobs,
        'modal',
        { backend: 'modal' },
        {
          harbor: join(venv, 'bin/harbor'),
          env: userEnv(venv, {
            DOCKER_CONFIG: dockerConfig,
            MODAL_SERVER_URL: sim.url,
            MODAL_TOKEN_ID: sim.tokenId,
            MODAL_TOKEN_SECRET: sim.tokenSecret,
            NODE_EXTRA_CA_CERTS: caFile,
            HOME: root,
          }),
          args: ['-i', 'private-image', '-i', 'allowlist'],
        },
      );
      expect(result.output).not.toContain(sim.tokenSecret);
      expect(outcomes(join(jobs, 'modal')), result.output).toEqual({ 'private-image': 1, allowlist: 1 });
    } finally {
      await sim.close();
    }
  }, 600_000);
});

describe('the wheel without a usable Node.js', () => {
  let venv: string;
  beforeAll(async () => {
    venv = await freshVenv(VERSIONS.at(-1)!);
  }, 300_000);

  it('no node on PATH: the job stops before any trial, saying to install Node.js 20.18 or later', async () => {
    const jobs = join(root, 'jobs-no-node');
    const result = await harborRun(
      FIXTURES,
      jobs,
      'no-node',
      { backend: 'docker' },
      {
        harbor: join(venv, 'bin/harbor'),
        env: { ...userEnv(venv), PATH: `${join(venv, 'bin')}:/usr/sbin:/sbin` },
        args: ['-i', 'private-image'],
      },
    );
    expect(result.code).not.toBe(0);
    expect(result.output).toContain('no `node` is on PATH: install Node.js 20.18 or later');
    expect(await harborContainers()).toEqual([]);
  }, 300_000);

  it('a node too old: the job stops, naming its version and the one berth needs', async () => {
    const old = join(root, 'old-node');
    await mkdir(old);
    await writeFile(join(old, 'node'), '#!/bin/sh\necho v18.19.1\n');
    await chmod(join(old, 'node'), 0o755);
    const jobs = join(root, 'jobs-old-node');
    const result = await harborRun(
      FIXTURES,
      jobs,
      'old-node',
      { backend: 'docker' },
      {
        harbor: join(venv, 'bin/harbor'),
        env: { ...userEnv(venv), PATH: `${join(venv, 'bin')}:${old}:/usr/sbin:/usr/bin:/sbin:/bin` },
        args: ['-i', 'private-image'],
      },
    );
    expect(result.code).not.toBe(0);
    expect(result.output).toContain('is Node.js v18.19.1, and berth needs 20.18 or later');
  }, 300_000);
});
