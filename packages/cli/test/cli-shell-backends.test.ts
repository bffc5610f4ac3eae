// `berth shell` on Kubernetes and Modal, typed into a real terminal as on Docker (cli-shell.test.ts):
// the exec subresource's tty and resize channel against the test cluster, Modal's pty_info against
// the simulator. The task's agent runs as uid 1234 (harbor's [agent] user), which neither engine's
// exec can do itself: the kit's launcher switches to it inside the sandbox.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminApi, BERTH_KUBECONFIG, NAMESPACE } from '@berth/test-support/kube-cluster';
import { ModalSimulator } from '@berth/test-support/modal-sim';
import { collect, spawnInPty, waitForOutput } from './support/berth-bin.js';
import { writeDataset } from './support/dataset.js';
import { containersLabelled } from './support/docker-state.js';

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'berth-cli-shell-backends-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** One task whose agent is uid 1234, on harbor's default (public) network, which every backend has. */
async function task(id: string): Promise<string> {
  await writeDataset(join(root, id), [{ id, kind: 'pass' }]);
  const dir = join(root, id, id);
  const toml = join(dir, 'task.toml');
  await writeFile(toml, (await readFile(toml, 'utf8')).replace('network_mode = "no-network"\n', '').replace('[agent]\n', '[agent]\nuser = 1234\n'));
  return dir;
}

/** Types a few lines into `berth shell` through a pty of 27x91 and returns what came back and the exit code. */
async function typedShell(args: string[], env: Record<string, string>) {
  const child = spawnInPty(['shell', ...args], { cols: 91, rows: 27, env });
  const done = collect(child, { timeoutMs: 150_000, keepStdin: true });
  await waitForOutput(child, /it is removed when this ends/, 120_000);
  child.stdin!.write('echo typed-$((6*7)); stty size; test -t 0 && echo on-a-tty; echo "uid=$(id -u)"; echo to-err >&2\r');
  await waitForOutput(child, /typed-42[\s\S]*uid=\d+/);
  child.stdin!.write('exit 3\r');
  return done;
}

describe('berth shell on other backends', () => {
  it('k8s: a real terminal of the caller size in the pod, as the task agent user; exit ends it and removes the pod', async () => {
    const dir = await task('shell-k8s');
    const result = await typedShell([dir, '--backend', 'k8s'], { KUBECONFIG: BERTH_KUBECONFIG });
    expect(result.code, result.stdout + result.stderr).toBe(3);
    expect(result.stdout).toMatch(/27 91/);
    expect(result.stdout).toContain('on-a-tty');
    expect(result.stdout).toContain('uid=1234');
    // stderr comes through the terminal too.
    expect(result.stdout).toContain('to-err');
    const pods = await adminApi().listNamespacedPod({ namespace: NAMESPACE, labelSelector: 'berth.task=shell-k8s' });
    expect(pods.items.map((p) => p.metadata?.name)).toEqual([]);
  }, 180_000);

  it('modal: the same through the simulator (pty_info on the exec request)', async () => {
    const sim = await ModalSimulator.start();
    try {
      const caFile = join(root, 'modal-ca.pem');
      await writeFile(caFile, sim.ca);
      const dir = await task('shell-modal');
      const result = await typedShell([dir, '--backend', 'modal'], {
        MODAL_SERVER_URL: sim.url,
        MODAL_TOKEN_ID: sim.tokenId,
        MODAL_TOKEN_SECRET: sim.tokenSecret,
        NODE_EXTRA_CA_CERTS: caFile,
        HOME: root,
      });
      expect(result.code, result.stdout + result.stderr).toBe(3);
      expect(result.stdout).toMatch(/27 91/);
      expect(result.stdout).toContain('on-a-tty');
      expect(result.stdout).toContain('uid=1234');
      expect(result.stdout).toContain('to-err');
      expect(result.stdout + result.stderr).not.toContain(sim.tokenSecret);
      expect(await containersLabelled('berth.modal-sim', 'modal.tag.berth.task=shell-modal')).toEqual([]);
    } finally {
      await sim.close();
    }
  }, 180_000);
});
