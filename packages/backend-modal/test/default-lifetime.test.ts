// defaultLifetimeMs on Modal, against the simulator (which enforces timeout_secs as Modal does: the
// sandbox ends with TIMEOUT): the timeout a sandbox is created with when its spec sets no lifetime,
// the factory's refusals (Modal's cap of 24 h, and no "off"), the error when that default ends a
// sandbox, and a sandbox whose process died with no guardian ending anyway.
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, TaskFailure } from '@berth/core';
import { createModalBackend, type ModalBackendOptions } from '@berth/backend-modal';
import { goneWithin, startChild, type GuardedChild } from '@berth/test-support/guardian-children';
import { ModalSimulator } from '@berth/test-support/modal-sim';

const sim = await ModalSimulator.start();
const backends: Array<{ close(): Promise<void> }> = [];
const children: GuardedChild[] = [];
afterAll(async () => {
  for (const child of children) child.proc.kill('SIGKILL');
  await Promise.all(backends.map((b) => b.close()));
  await sim.close();
});

function backend(extra: Partial<ModalBackendOptions> = {}) {
  const b = createModalBackend({ ...sim.clientOptions(), ...extra });
  backends.push(b);
  return b;
}
const SPEC = { image: 'berth-test/busybox:latest' };

/** The timeout_secs the one running sandbox of this file was created with. */
async function timeoutSecs(): Promise<unknown> {
  const ids = await sim.sandboxes();
  expect(ids).toHaveLength(1);
  return sim.definition(ids[0]!)?.timeout_secs;
}

function refused(options: Partial<ModalBackendOptions>): ConfigError {
  try {
    createModalBackend({ ...sim.clientOptions(), ...options });
  } catch (error) {
    if (ConfigError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('defaultLifetimeMs on Modal (simulated)', () => {
  it('the factory refuses what Modal cannot take, before any I/O, naming the option: over 24 h, false, not a number of ms', () => {
    const over = refused({ defaultLifetimeMs: 86_400_001 });
    expect(over.path).toBe('options.defaultLifetimeMs');
    expect(over.message).toMatch(/^createModalBackend's defaultLifetimeMs is at most 86400000 \(24 h\): Modal's longest sandbox timeout is 24 h/);
    const off = refused({ defaultLifetimeMs: false });
    expect(off.message).toMatch(/^createModalBackend's defaultLifetimeMs cannot be false: .*a sandbox always has one/);
    for (const bad of [0, -1, 2.5, '1h', null]) {
      const error = refused({ defaultLifetimeMs: bad as never });
      expect(error.path).toBe('options.defaultLifetimeMs');
      expect(error.message).toMatch(/whole number of milliseconds above 0 up to 86400000 \(24 h\); got /);
    }
    expect(() => backend({ defaultLifetimeMs: 86_400_000 })).not.toThrow();
  });

  it("no lifetime in the spec: timeout_secs is the default, 24 h; the spec's own lifetime wins over it", async () => {
    {
      await using env = await backend().start(SPEC);
      expect(await timeoutSecs()).toBe(86_400);
      expect(env.phase).toBe('running');
    }
    {
      await using _env = await backend({ defaultLifetimeMs: 3_600_000 }).start({ ...SPEC, timeouts: { lifetimeMs: 600_000 } });
      expect(await timeoutSecs()).toBe(600);
    }
    {
      await using _env = await backend({ defaultLifetimeMs: 3_600_000 }).start(SPEC);
      expect(await timeoutSecs()).toBe(3600);
    }
  });

  const byDefault = (error: unknown) => {
    expect(TaskFailure.isInstance(error) && error.type, String(error)).toBe('LifetimeExceeded');
    expect((error as Error).message).toMatch(
      /reached the modal backend's default lifetime of 3000 ms \(3 s\) during exec: the spec sets no timeouts\.lifetimeMs/,
    );
    expect((error as Error).message).toMatch(/raise defaultLifetimeMs, or give the spec its own timeouts\.lifetimeMs$/);
  };

  it("a command running when Modal's timeout ends the sandbox at the default: LifetimeExceeded saying it was the backend's default, naming the option", async () => {
    await using env = await backend({ defaultLifetimeMs: 3000 }).start(SPEC);
    expect(await timeoutSecs()).toBe(3);
    byDefault(await env.exec('sleep 60').catch((e: unknown) => e));
  }, 60_000);

  it('the first call after the sandbox ended at the default says the same', async () => {
    await using env = await backend({ defaultLifetimeMs: 3000 }).start({ ...SPEC, labels: { 'berth.test-lifetime': 'after' } });
    // Modal (here the simulator) ends it by itself, nothing of berth's acting: its container goes.
    const containers = async () => (await sim.docker.listContainers({ all: true, filters: { label: ['modal.tag.berth.test-lifetime=after'] } })).length;
    expect(await goneWithin(containers, 20_000)).toBeDefined();
    byDefault(await env.exec('true').catch((e: unknown) => e));
  }, 60_000);

  it('a process killed with no guardian (a machine gone whole): its sandbox ends at the default lifetime all the same', async () => {
    const tag = `l-${randomBytes(4).toString('hex')}`;
    const child = startChild('modal', 1, tag, {
      BERTH_GUARDIAN: '0',
      GUARDIAN_CHILD_OPTIONS: JSON.stringify({
        serverUrl: sim.url,
        ca: sim.ca,
        tokenId: sim.tokenId,
        tokenSecret: sim.tokenSecret,
        modalConfigEnv: {},
        defaultLifetimeMs: 4000,
      }),
    });
    children.push(child);
    await child.ready;
    const running = async () => (await sim.docker.listContainers({ filters: { label: [`modal.tag.berth.test-guardian=${tag}`] } })).length;
    expect(await running()).toBe(1);
    child.proc.kill('SIGKILL');
    await child.exited;
    const started = Date.now();
    const took = await goneWithin(running, 20_000);
    console.log(`modal: the killed process's sandbox ended by its default lifetime ${took} ms after the kill (${Date.now() - started} ms)`);
    expect(took).toBeDefined();
  }, 60_000);
});
