// Runs once around the whole test run: checks that the real parts the tests need are there, and
// afterwards that no test left a berth-labelled container, pod, pull secret or built image behind.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import Docker from 'dockerode';

const docker = new Docker();
// Every test process inherits this session, so the leak check below sees exactly this run's
// containers, not those of another run on the same engine.
const session = `test-${randomBytes(6).toString('hex')}`;
const startedAt = Math.floor(Date.now() / 1000);

export async function setup(): Promise<void> {
  process.env.BERTH_SESSION = session;
  try {
    await docker.ping();
  } catch (error) {
    throw new Error(`the tests need a running Docker engine; run test/setup/setup.sh first (${(error as Error).message})`);
  }
  try {
    const res = await fetch('http://127.0.0.1:5000/v2/');
    if (res.status !== 401) throw new Error(`expected 401 from the auth-protected registry, got ${res.status}`);
  } catch (error) {
    throw new Error(`the tests need the private registry on 127.0.0.1:5000; run test/setup/setup.sh first (${(error as Error).message})`);
  }
  try {
    await docker.getImage('berth-test/busybox:latest').inspect();
  } catch {
    throw new Error('the tests need the image berth-test/busybox:latest; run test/setup/setup.sh first');
  }
  // Docker's allowlist helper image is made by berth on first use (egress-image.ts): none is left
  // from before, so this run makes it, as a new machine would.
  await removeEgressImages();
  try {
    await kube().listNamespacedPod({ namespace: 'berth-test', limit: 1 });
  } catch (error) {
    throw new Error(`the tests need the test Kubernetes cluster; run test/setup/setup.sh first (${(error as Error).message})`);
  }
}

function kube(): CoreV1Api {
  const kc = new KubeConfig();
  kc.loadFromFile(`${process.env.BERTH_KUBE_STATE ?? '/var/lib/berth-kube'}/admin.kubeconfig`);
  return kc.makeApiClient(CoreV1Api);
}

export async function teardown(): Promise<void> {
  // Everything left is removed and named, all kinds at once; the run then fails. vitest only
  // prints an error thrown here ("error during close") and still exits 0, so the exit code is set.
  const left: string[] = [];
  const pods = await kube().listNamespacedPod({ namespace: 'berth-test', labelSelector: `berth.managed=true,berth.session=${session}` });
  if (pods.items.length > 0) {
    const names = pods.items.map((p) => p.metadata?.name ?? '?');
    for (const name of names)
      await kube()
        .deleteNamespacedPod({ name, namespace: 'berth-test', gracePeriodSeconds: 0 })
        .catch(() => undefined);
    left.push(`${names.length} berth pod(s): ${names.join(', ')}`);
  }
  const secrets = await kube().listNamespacedSecret({ namespace: 'berth-test', labelSelector: `berth.managed=true,berth.session=${session}` });
  if (secrets.items.length > 0) {
    const names = secrets.items.map((s) => s.metadata?.name ?? '?');
    for (const name of names)
      await kube()
        .deleteNamespacedSecret({ name, namespace: 'berth-test' })
        .catch(() => undefined);
    left.push(`${names.length} berth pull secret(s): ${names.join(', ')}`);
  }
  const ours = await docker.listContainers({ all: true, filters: { label: ['berth.managed=true', `berth.session=${session}`] } });
  if (ours.length > 0) {
    const names = ours.map((c) => `${c.Names[0] ?? c.Id} (${c.Image}, ${c.State})`);
    for (const c of ours)
      await docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => undefined);
    left.push(`${ours.length} berth container(s): ${names.join(', ')}`);
  }
  // Builds that failed part-way leave their finished steps as untagged layers (the builder's
  // cache): remove those this run made, now that no build is running.
  const dangling = await docker.listImages({ filters: { dangling: ['true'] } });
  for (const image of dangling.filter((i) => i.Created >= startedAt))
    await docker
      .getImage(image.Id)
      .remove({ force: true })
      .catch(() => undefined);
  // Built images are a cache users keep (README), so a test that builds removes what it built.
  const builds = (await docker.listImages({ filters: { label: ['berth.build'] } })).filter((i) => i.Created >= startedAt);
  if (builds.length > 0) {
    for (const image of builds)
      await docker
        .getImage(image.Id)
        .remove({ force: true })
        .catch(() => undefined);
    left.push(`${builds.length} built image(s): ${builds.map((i) => i.RepoTags?.join(',') ?? i.Id).join('; ')}`);
  }
  removePrivateCopies();
  // A cache users keep, like built images: this run made it, this run removes it.
  await removeEgressImages();
  if (left.length > 0) {
    process.exitCode = 1;
    throw new Error(`the test run left these behind (now removed): ${left.join('; ')}`);
  }
}

/** The images berth made for Docker's allowlists (labelled berth.egress). */
async function removeEgressImages(): Promise<void> {
  for (const image of await docker.listImages({ filters: { label: ['berth.egress'] } }))
    await docker
      .getImage(image.Id)
      .remove({ force: true })
      .catch(() => undefined);
}

/** Keep the machine clean for the next run as well: no private image copies pulled into the engine. */
function removePrivateCopies(): void {
  for (const tag of ['latest', 'exec', 'errors', 'harbor', 'build', 'k8s', 'mounts', 'seed-001']) {
    try {
      execFileSync('docker', ['image', 'rm', `127.0.0.1:5000/berth/private-busybox:${tag}`], { stdio: 'ignore' });
    } catch {
      /* not present */
    }
  }
}
