// harbor itself (0.25.0 from PyPI) on berth: `harbor run -e berth_harbor:BerthEnvironment` with the
// oracle agent on the repository's example tasks and this plugin's fixtures, on Docker, the test
// cluster and the Modal simulator, read back from harbor's own result files.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminApi, BERTH_KUBECONFIG, NAMESPACE } from '@berth/test-support/kube-cluster';
import { ModalSimulator } from '@berth/test-support/modal-sim';
import { removeBuiltImages } from '@berth/test-support/built-images';
import { writeRegistryLogin } from '@berth/test-support/registry-login';
import { EXAMPLES, FIXTURES, harborContainers, harborRun, outcomes } from './support/harbor.js';

let root: string;
let dockerConfig: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'berth-harbor-'));
  // The private registry's login, as `docker login` writes it: berth reads it (never an --ek value).
  dockerConfig = await writeRegistryLogin(join(root, 'docker-config'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
  // The example built from its Dockerfile (on Docker, and locally before its push for the cluster).
  await removeBuiltImages([join(EXAMPLES, 'built-image', 'environment')]);
});

const EXAMPLE_REWARDS = { 'built-image': 1, 'count-lines': 1, 'fix-the-bug': 1, 'hello-world': 1 };

describe('harbor run on berth', () => {
  it('docker: every example task (from a warm pool), a private image with credentials, a task whose agent phase is public and verifier phase offline, and an allowlist task (with --ek egress_image; harbor-installed.test.ts runs one without), all rewarded 1; nothing left', async () => {
    const jobs = join(root, 'jobs');
    const env = { DOCKER_CONFIG: dockerConfig };
    // From a warm pool (the plugin's prepare readies each sandbox while it waits).
    const examples = await harborRun(EXAMPLES, jobs, 'docker-examples', { backend: 'docker', pool: '2' }, { env });
    expect(examples.code, examples.output).toBe(0);
    expect(outcomes(join(jobs, 'docker-examples'))).toEqual(EXAMPLE_REWARDS);
    const fixtures = await harborRun(FIXTURES, jobs, 'docker-fixtures', { backend: 'docker' }, { env, args: ['-i', 'private-image', '-i', 'phases'] });
    expect(fixtures.code, fixtures.output).toBe(0);
    expect(outcomes(join(jobs, 'docker-fixtures'))).toEqual({ 'private-image': 1, phases: 1 });
    // An allowlisted agent phase: harbor accepts it because the plugin claims allowlists for Docker
    // (no key needed); --ek egress_image still overrides the helper image berth makes.
    const allowlist = await harborRun(
      FIXTURES,
      jobs,
      'docker-allowlist',
      { backend: 'docker', egress_image: 'berth-test/egress:latest' },
      { env, args: ['-i', 'allowlist'] },
    );
    expect(outcomes(join(jobs, 'docker-allowlist')), allowlist.output).toEqual({ allowlist: 1 });
    expect(await harborContainers()).toEqual([]);
  }, 600_000);

  it('kubernetes: the example tasks (no-network ones included, an image built with --ek build_repository) and a private image, on the test cluster; no pod left', async () => {
    const jobs = join(root, 'jobs');
    const ek = { backend: 'k8s', kubeconfig: BERTH_KUBECONFIG, build_repository: '127.0.0.1:5000/berth/harbor-builds' };
    const examples = await harborRun(EXAMPLES, jobs, 'k8s-examples', ek, { env: { DOCKER_CONFIG: dockerConfig } });
    expect(examples.code, examples.output).toBe(0);
    expect(outcomes(join(jobs, 'k8s-examples'))).toEqual(EXAMPLE_REWARDS);
    const fixtures = await harborRun(FIXTURES, jobs, 'k8s-private', ek, { env: { DOCKER_CONFIG: dockerConfig }, args: ['-i', 'private-image'] });
    expect(outcomes(join(jobs, 'k8s-private')), fixtures.output).toEqual({ 'private-image': 1 });
    const pods = await adminApi().listNamespacedPod({ namespace: NAMESPACE, labelSelector: 'berth.harbor' });
    expect(pods.items.map((p) => p.metadata?.name)).toEqual([]);
  }, 600_000);

  it('modal: the example tasks, the phases task and an allowlist task through the Modal simulator', async () => {
    const sim = await ModalSimulator.start();
    try {
      const caFile = join(root, 'modal-ca.pem');
      await writeFile(caFile, sim.ca);
      const env = { MODAL_SERVER_URL: sim.url, MODAL_TOKEN_ID: sim.tokenId, MODAL_TOKEN_SECRET: sim.tokenSecret, NODE_EXTRA_CA_CERTS: caFile, HOME: root };
      const jobs = join(root, 'jobs');
      const examples = await harborRun(EXAMPLES, jobs, 'modal-examples', { backend: 'modal' }, { env });
      expect(examples.code, examples.output).toBe(0);
      expect(examples.output).not.toContain(sim.tokenSecret);
      expect(outcomes(join(jobs, 'modal-examples'))).toEqual(EXAMPLE_REWARDS);
      // phases, and a task whose agent phase runs under an allowlist (harbor accepts it: the plugin claims allowlists on Modal).
      const phases = await harborRun(FIXTURES, jobs, 'modal-phases', { backend: 'modal' }, { env, args: ['-i', 'phases', '-i', 'allowlist'] });
      expect(outcomes(join(jobs, 'modal-phases')), phases.output).toEqual({ phases: 1, allowlist: 1 });
    } finally {
      await sim.close();
    }
  }, 600_000);
});
