// harbor's network_mode = "allowlist" run unchanged on each backend, with harbor's per-phase
// semantics: the sandbox starts on no-network, the agent runs under its allowlist (one of this
// machine's addresses reached, another not, from inside), the verifier public (the other reached).
// Docker (its packet filter written by the helper image berth makes), the test cluster (kube-router), the
// Modal simulator (an ALLOWLIST of CIDRs, enforced by its own packet filter; and of a hostname,
// matched on the TLS server name of ClientHellos sent to port 443).
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Backend } from '@berth/core';
import { clientHello, listenForServerNames, listenForTokens, type ReachableListener } from '@berth/conformance';
import { createDockerBackend } from '@berth/backend-docker';
import { createK8sBackend } from '@berth/backend-k8s';
import { createModalBackend } from '@berth/backend-modal';
import { runHarborJob } from '@berth/harbor';
import { bridgeGateway, secondHostAddress } from '@berth/test-support/docker-bridge';
import { BERTH_KUBECONFIG, NAMESPACE, POD_BRIDGE_ADDRESS, POD_BRIDGE_SECOND_ADDRESS } from '@berth/test-support/kube-cluster';
import { ModalSimulator } from '@berth/test-support/modal-sim';
import { phasesToml, tempDir, writeAllowlistPhasesTask, writeTask } from './support.js';

const dirs: string[] = [];
const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

async function listeners(allowedHost: string, deniedHost: string): Promise<[ReachableListener, ReachableListener]> {
  const allowed = await listenForTokens(allowedHost);
  const denied = await listenForTokens(deniedHost);
  closers.push(
    () => allowed.close(),
    () => denied.close(),
  );
  return [allowed, denied];
}

async function runOn(name: string, backend: Backend, allowed: ReachableListener, denied: ReachableListener): Promise<void> {
  const base = await tempDir(`allowlist-${name}`);
  dirs.push(base);
  const root = join(base, 'tasks');
  await writeAllowlistPhasesTask(root, allowed, denied, `berth-${name}`);
  const jobDir = join(base, 'job');
  const report = await runHarborJob({ tasksDir: root, backend, jobDir });
  expect(report.tasks[0], JSON.stringify(report.tasks[0])).toMatchObject({ status: 'scored', outcome: { reward: 1 } });
  const saw = await readFile(join(jobDir, 'allowlist-phases', 'attempt-1', 'verifier', 'saw.txt'), 'utf8');
  expect(saw).toBe('agent-allowed=reached\nagent-denied=blocked\nverifier-denied=reached\n');
  expect(allowed.received(`berth-${name}-agent-allowed`)).toBe(true);
  expect(denied.received(`berth-${name}-agent-denied`)).toBe(false);
  expect(denied.received(`berth-${name}-verifier-denied`)).toBe(true);
}

describe('harbor allowlist tasks, per phase, on every backend', () => {
  it('Docker (the helper image berth makes)', async () => {
    const [allowed, denied] = await listeners(await bridgeGateway(), await secondHostAddress());
    await runOn('docker', createDockerBackend(), allowed, denied);
  }, 180_000);

  it('Kubernetes (the test cluster)', async () => {
    const [allowed, denied] = await listeners(POD_BRIDGE_ADDRESS, POD_BRIDGE_SECOND_ADDRESS);
    const backend = createK8sBackend({
      kubeconfig: { file: BERTH_KUBECONFIG },
      namespace: NAMESPACE,
      networkPolicy: { probe: { host: allowed.host, port: allowed.port } },
    });
    await runOn('k8s', backend, allowed, denied);
  }, 180_000);

  it('Modal (the simulator)', async () => {
    const [allowed, denied] = await listeners(await bridgeGateway(), await secondHostAddress());
    const sim = await ModalSimulator.start();
    const backend = createModalBackend({ serverUrl: sim.url, ca: sim.ca, tokenId: sim.tokenId, tokenSecret: sim.tokenSecret, modalConfigEnv: {} });
    closers.push(
      () => sim.close(),
      () => backend.close(),
    );
    await runOn('modal', backend, allowed, denied);
  }, 180_000);

  it('Modal (the simulator): an allowed hostname, matched on the TLS server name, in the agent phase only', async () => {
    const sim = await ModalSimulator.start();
    const backend = createModalBackend({ serverUrl: sim.url, ca: sim.ca, tokenId: sim.tokenId, tokenSecret: sim.tokenSecret, modalConfigEnv: {} });
    closers.push(
      () => sim.close(),
      () => backend.close(),
    );
    // Port 443 is shared with other tests (they take turns): held only while the job runs.
    const listener = await listenForServerNames(await bridgeGateway());
    try {
      const tag = `t${Date.now().toString(36)}`;
      const names = { allowed: `${tag}.allowed.test`, agentDenied: `${tag}-agent.denied.test`, verifierDenied: `${tag}-verifier.denied.test` };
      // Each phase sends real ClientHellos (Node's TLS client's, embedded) to the listener's port 443.
      const send = async (name: string) => `echo ${(await clientHello(name)).toString('base64')} | base64 -d | nc -w 3 ${listener.host} 443 >/dev/null 2>&1`;
      const base = await tempDir('allowlist-modal-hostname');
      dirs.push(base);
      await writeTask(join(base, 'tasks'), 'allowlist-hostname', {
        toml: phasesToml(`network_mode = "allowlist"\nallowed_hosts = ["${names.allowed}"]`),
        solve: `#!/bin/sh\n${await send(names.allowed)}\n${await send(names.agentDenied)}\n`,
        test: `#!/bin/sh\nmkdir -p /logs/verifier\n${await send(names.verifierDenied)}\necho 1 > /logs/verifier/reward.txt\n`,
      });
      const report = await runHarborJob({ tasksDir: join(base, 'tasks'), backend, jobDir: join(base, 'job') });
      expect(report.tasks[0], JSON.stringify(report.tasks[0])).toMatchObject({ status: 'scored', outcome: { reward: 1 } });
      expect(listener.received(names.allowed), 'the allowed hostname, from the agent phase').toBe(true);
      expect(listener.received(names.agentDenied), 'another hostname, from the agent phase').toBe(false);
      expect(listener.received(names.verifierDenied), 'any hostname, from the public verifier').toBe(true);
    } finally {
      await listener.close();
    }
  }, 180_000);
});
