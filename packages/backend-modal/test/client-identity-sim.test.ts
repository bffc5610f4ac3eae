// Client identity against the simulator: Modal refusing the client version (FAILED_PRECONDITION
// with the text Modal's server sends old clients) is a ConfigError on options.clientVersion at
// start and in preflight, while a FAILED_PRECONDITION about the spec (a named secret lacking its
// keys) stays the spec's. The refusal comes from the simulator's failNext fault here.
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '@berth/core';
import { createModalBackend } from '@berth/backend-modal';
import { Code, ModalSimulator } from './sim/index.js';

const sim = await ModalSimulator.start();
const backend = createModalBackend({ ...sim.clientOptions(), appName: 'berth-identity' });
afterAll(async () => {
  await backend.close();
  await sim.close();
});

const TOO_OLD = 'The client version (1.6.4) is too old. Please update (pip install --upgrade modal).';

describe('client version refused by Modal (simulated)', () => {
  it('at start: a ConfigError on options.clientVersion naming what to upgrade or set, no sandbox made', async () => {
    sim.faults.failNext('AppGetOrCreate', Code.FAILED_PRECONDITION, TOO_OLD);
    const error = await backend.start({ image: 'berth-test/busybox:latest' }).catch((e: unknown) => e);
    expect(ConfigError.isInstance(error), String(error)).toBe(true);
    expect(error).toMatchObject({ path: 'options.clientVersion', message: expect.stringContaining(TOO_OLD) });
    expect((error as Error).message).toMatch(/upgrade @berth\/backend-modal/);
    expect(JSON.stringify(error)).not.toContain(sim.tokenSecret);
    expect(await sim.sandboxes()).toEqual([]);
  });

  it('in preflight: the api check fails naming the option', async () => {
    sim.faults.failNext('AppGetOrCreate', Code.FAILED_PRECONDITION, TOO_OLD);
    const fresh = createModalBackend({ ...sim.clientOptions(), appName: 'berth-identity-2' });
    const api = (await fresh.preflight()).checks.find((c) => c.name === 'api');
    await fresh.close();
    expect(api).toMatchObject({ status: 'fail', message: expect.stringContaining('options.clientVersion') });
  });

  it("a FAILED_PRECONDITION about the spec (a named secret without its keys) stays the spec's", async () => {
    sim.addSecret('half-identity', { REGISTRY_USERNAME: 'berth' });
    const error = await backend
      .start({ image: { ref: '127.0.0.1:5000/berth/private-busybox:latest', auth: { secretName: 'half-identity' } } })
      .catch((e: unknown) => e);
    expect(ConfigError.isInstance(error), String(error)).toBe(true);
    expect((error as ConfigError).path).not.toBe('options.clientVersion');
  });
});
