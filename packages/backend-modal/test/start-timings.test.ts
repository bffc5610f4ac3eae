// Start telemetry on Modal (simulated): a start reaches requested, admitted, pulled (the image on
// Modal), accepted (the sandbox created), running (it has a task), then firstCommand at the first
// exec, in that order, each once.
import { afterAll, describe, expect, it } from 'vitest';
import type { StartMark } from '@berth/core';
import { createModalBackend } from '@berth/backend-modal';
import { ModalSimulator } from '@berth/test-support/modal-sim';

const sim = await ModalSimulator.start();
const backend = createModalBackend({ serverUrl: sim.url, ca: sim.ca, tokenId: sim.tokenId, tokenSecret: sim.tokenSecret, modalConfigEnv: {} });
afterAll(async () => {
  await backend.close();
  await sim.close();
});

describe('start timings on Modal (simulated)', () => {
  it('a start reaches its marks in order, each once', async () => {
    await using env = backend.environment({ image: 'berth-test/busybox:latest' });
    const told: StartMark[] = [];
    env.events.on('reached', (mark) => told.push(mark));
    await env.start();
    await env.exec('true');
    expect(told).toEqual(['requested', 'admitted', 'pulled', 'accepted', 'running', 'firstCommand']);
    const { marks } = env.startTimings!;
    const order = told.map((mark) => marks[mark]!);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
  }, 120_000);
});
