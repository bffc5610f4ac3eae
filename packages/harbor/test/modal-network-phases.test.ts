// Harbor's per-phase network_mode on Modal (the simulator): the agent runs on 'none', the verifier
// on 'public', in one sandbox whose outbound policy berth replaces between phases through the task
// router's TaskSetNetworkAccess (the simulator detaches and attaches the engine's bridge). Each
// phase sends a token from inside to a listener on the bridge's gateway, this machine.
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { listenForTokens } from '@berth/conformance';
import { createModalBackend } from '@berth/backend-modal';
import { runHarborJob } from '@berth/harbor';
import { bridgeGateway } from '@berth/test-support/docker-bridge';
import { ModalSimulator } from '@berth/test-support/modal-sim';
import { tempDir, writeNetworkPhasesTask } from './support.js';

const listener = await listenForTokens(await bridgeGateway());
const sim = await ModalSimulator.start();
const backend = createModalBackend({ serverUrl: sim.url, ca: sim.ca, tokenId: sim.tokenId, tokenSecret: sim.tokenSecret, modalConfigEnv: {} });
const dirs: string[] = [];
afterAll(async () => {
  await backend.close();
  await sim.close();
  await listener.close();
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

describe('harbor per-phase networks on Modal (simulated)', () => {
  it("the agent's phase is cut off, the verifier's reaches the listener, in the same sandbox", async () => {
    const base = await tempDir('modal-network');
    dirs.push(base);
    const root = join(base, 'tasks');
    await writeNetworkPhasesTask(root, listener, 'berth-modal-phase');
    const jobDir = join(base, 'job');
    const report = await runHarborJob({ tasksDir: root, backend, jobDir });
    expect(report.tasks[0], JSON.stringify(report.tasks[0])).toMatchObject({ status: 'scored', outcome: { reward: 1 } });
    const saw = await readFile(join(jobDir, 'phases', 'attempt-1', 'verifier', 'saw.txt'), 'utf8');
    expect(saw).toBe('agent=blocked\nverifier=reached\n');
    expect(listener.received('berth-modal-phase-agent')).toBe(false);
    expect(listener.received('berth-modal-phase-verifier')).toBe(true);
    // The switches went through the router, each answered OK.
    const switches = sim.calls.filter((c) => c.path.endsWith('/TaskSetNetworkAccess')).map((c) => c.code);
    expect(switches.length).toBeGreaterThan(0);
    expect(switches.every((code) => code === 0)).toBe(true);
  }, 180_000);
});
