// Client identity against the simulator: what berth sends (x-modal-client-type/-version, as the
// simulator records them), the simulator's minimum client version (FAILED_PRECONDITION with the
// text Modal's server sends old clients) as a ConfigError on options.clientVersion at start and in
// preflight, options.clientVersion getting past it, its x-modal-warning as a process warning once,
// and a FAILED_PRECONDITION about the spec (a named secret lacking its keys) staying the spec's.
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '@berth/core';
import { createModalBackend } from '@berth/backend-modal';
import { Code, ModalSimulator } from '@berth/test-support/modal-sim';

const sim = await ModalSimulator.start();
const backend = createModalBackend({ ...sim.clientOptions(), appName: 'berth-identity' });
afterAll(async () => {
  await backend.close();
  await sim.close();
});

const TOO_OLD = 'The client version (1.6.4) is too old. Please update (pip install --upgrade modal).';

describe('client identity (simulated)', () => {
  it('every control-plane call says type 1 and version 1.6.4', async () => {
    const before = sim.calls.length;
    await using env = await backend.start({ image: 'berth-test/busybox:latest' });
    await env.exec('true');
    const control = sim.calls.slice(before).filter((c) => c.path.startsWith('/modal.client.ModalClient/'));
    expect(control.length).toBeGreaterThan(2);
    for (const call of control) expect(call).toMatchObject({ clientType: '1', clientVersion: '1.6.4' });
  });

  it("the simulator's minimum client version refuses berth's default (ConfigError on options.clientVersion), and clientVersion gets past it", async () => {
    sim.faults.requireClientVersion('1.7.0');
    try {
      const refused = createModalBackend({ ...sim.clientOptions(), appName: 'berth-identity-min' });
      const error = await refused.start({ image: 'berth-test/busybox:latest' }).catch((e: unknown) => e);
      await refused.close();
      expect(ConfigError.isInstance(error), String(error)).toBe(true);
      expect(error).toMatchObject({ path: 'options.clientVersion', message: expect.stringContaining('The client version (1.6.4) is too old') });
      const newer = createModalBackend({ ...sim.clientOptions(), appName: 'berth-identity-min', clientVersion: '1.7.0' });
      try {
        await using env = await newer.start({ image: 'berth-test/busybox:latest' });
        await expect(env.exec('echo ok')).resolves.toMatchObject({ stdout: 'ok\n' });
      } finally {
        await newer.close();
      }
    } finally {
      sim.faults.requireClientVersion(undefined);
    }
  });

  it("the simulator's x-modal-warning is a process warning BERTH_MODAL_SERVER_WARNING, once", async () => {
    const text = `Version 1.6.4 of \`modal\` will be deprecated on March 01, 2027 (${Date.now()}). Please upgrade.`;
    const warnings: Array<Error & { code?: string }> = [];
    const listen = (w: Error) => warnings.push(w);
    sim.faults.warnClients(text);
    process.on('warning', listen);
    try {
      await using env = await backend.start({ image: 'berth-test/busybox:latest' });
      await env.exec('true');
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', listen);
      sim.faults.warnClients(undefined);
    }
    expect(warnings.filter((w) => w.code === 'BERTH_MODAL_SERVER_WARNING').map((w) => w.message)).toEqual([`Modal's server warns: ${text}`]);
  });
});

describe('client version refused by Modal (simulated)', () => {
  it('at start: a ConfigError on options.clientVersion naming what to upgrade or set, no sandbox made', async () => {
    // A backend of its own: the shared one has its app already, and would not ask again.
    const fresh = createModalBackend({ ...sim.clientOptions(), appName: 'berth-identity-1' });
    const before = (await sim.sandboxes()).length;
    sim.faults.failNext('AppGetOrCreate', Code.FAILED_PRECONDITION, TOO_OLD);
    const error = await fresh.start({ image: 'berth-test/busybox:latest' }).catch((e: unknown) => e);
    await fresh.close();
    expect(ConfigError.isInstance(error), String(error)).toBe(true);
    expect(error).toMatchObject({ path: 'options.clientVersion', message: expect.stringContaining(TOO_OLD) });
    expect((error as Error).message).toMatch(/upgrade @berth\/backend-modal/);
    expect(JSON.stringify(error)).not.toContain(sim.tokenSecret);
    expect((await sim.sandboxes()).length).toBe(before);
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
    expect(error).toMatchObject({ path: 'spec.image.auth.secretName', message: expect.stringContaining('REGISTRY_PASSWORD') });
  });
});
