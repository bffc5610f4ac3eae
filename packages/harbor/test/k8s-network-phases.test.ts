// Harbor's per-phase network_mode on Kubernetes, for real: the agent runs on 'none', the verifier on
// 'public', in one pod whose network label berth switches between phases (kube-router enforces
// berth's deny-all NetworkPolicy on the test cluster, test/kube/setup.sh). Each phase sends a token
// from inside the pod to a listener on this machine's address on the pods' host-only bridge.
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { listenForTokens } from '@berth/conformance';
import { createK8sBackend } from '@berth/backend-k8s';
import { BERTH_KUBECONFIG, NAMESPACE, POD_BRIDGE_ADDRESS } from '@berth/test-support/kube-cluster';
import { runHarborJob } from '@berth/harbor';
import { tempDir, writeNetworkPhasesTask } from './support.js';

const listener = await listenForTokens(POD_BRIDGE_ADDRESS);
const dirs: string[] = [];
afterAll(async () => {
  await listener.close();
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

describe('harbor per-phase networks on Kubernetes', () => {
  it("the agent's phase is cut off, the verifier's reaches the listener, in the same pod", async () => {
    const base = await tempDir('k8s-network');
    dirs.push(base);
    const root = join(base, 'tasks');
    await writeNetworkPhasesTask(root, listener, 'berth-phase');
    const backend = createK8sBackend({
      kubeconfig: { file: BERTH_KUBECONFIG },
      namespace: NAMESPACE,
      // No kube-proxy on the test cluster: the in-pod checks connect to the listener instead of the API server's service.
      networkPolicy: { probe: { host: listener.host, port: listener.port } },
    });
    const jobDir = join(base, 'job');
    const report = await runHarborJob({ tasksDir: root, backend, jobDir });
    expect(report.tasks[0], JSON.stringify(report.tasks[0])).toMatchObject({ status: 'scored', outcome: { reward: 1 } });
    const saw = await readFile(join(jobDir, 'phases', 'attempt-1', 'verifier', 'saw.txt'), 'utf8');
    expect(saw).toBe('agent=blocked\nverifier=reached\n');
    expect(listener.received('berth-phase-agent')).toBe(false);
    expect(listener.received('berth-phase-verifier')).toBe(true);
  }, 180_000);
});
