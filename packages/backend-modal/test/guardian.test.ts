// The guardian against the simulator: a process that started sandboxes and is then killed
// (SIGKILL, or SIGTERM with no handler) leaves none running within 30 s; of two such processes
// only the killed one's go. The guardian gets the token over its pipe, as in production.
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { goneWithin, guardiansOf, startChild, visibleOf, type GuardedChild } from '@berth/test-support/guardian-children';
import { ModalSimulator } from '@berth/test-support/modal-sim';

const sim = await ModalSimulator.start();
const children: GuardedChild[] = [];
afterAll(async () => {
  for (const child of children) child.proc.kill('SIGKILL');
  await sim.close();
});

/** The simulator's sandboxes of a tag still running (an ended sandbox's container is removed). */
const sandboxes = async (tag: string) => (await sim.docker.listContainers({ filters: { label: [`modal.tag.berth.test-guardian=${tag}`] } })).length;

const run = (count: number, spec?: Record<string, unknown>) => {
  const tag = `g-${randomBytes(4).toString('hex')}`;
  const child = startChild('modal', count, tag, {
    GUARDIAN_CHILD_OPTIONS: JSON.stringify({ serverUrl: sim.url, ca: sim.ca, tokenId: sim.tokenId, tokenSecret: sim.tokenSecret, modalConfigEnv: {} }),
    ...(spec ? { GUARDIAN_CHILD_SPEC: JSON.stringify(spec) } : {}),
  });
  children.push(child);
  return { tag, child };
};

describe('modal guardian (simulator)', () => {
  it("a killed process's sandboxes with services go whole: the services' own sandboxes too, none left within 30 s", async () => {
    const services = { db: { image: 'berth-test/busybox:latest', command: ['sleep', '100000'] } };
    const { tag, child } = run(2, { services });
    await child.ready;
    // Each sandbox and its service's sandbox carry the spec's labels as tags.
    expect(await sandboxes(tag)).toBe(4);
    child.proc.kill('SIGKILL');
    expect(await child.exited).toBe('SIGKILL');
    expect(await goneWithin(() => sandboxes(tag), 30_000)).toBeDefined();
  }, 120_000);

  for (const signal of ['SIGKILL', 'SIGTERM'] as const) {
    it(`a process killed with ${signal} leaves none of its 3 sandboxes within 30 s`, async () => {
      const { tag, child } = run(3);
      await child.ready;
      expect(await sandboxes(tag)).toBe(3);
      // One guardian for the child's backend; the token reached it over the pipe, not where others can read.
      const guardians = await guardiansOf(child.proc.pid!);
      expect(guardians).toHaveLength(1);
      const visible = await visibleOf(guardians[0]!);
      expect(visible).toContain('guardian-main.js');
      expect(visible).not.toContain(sim.tokenSecret);
      expect(visible).not.toContain(sim.tokenId);
      child.proc.kill(signal);
      expect(await child.exited).toBe(signal);
      const took = await goneWithin(() => sandboxes(tag), 30_000);
      console.log(`modal guardian, ${signal}: 3 sandboxes gone ${took} ms after the kill`);
      expect(took).toBeDefined();
    }, 120_000);
  }

  it('two processes on one host and one session: killing one terminates only its own sandboxes', async () => {
    const a = run(1);
    const b = run(1);
    await Promise.all([a.child.ready, b.child.ready]);
    a.child.proc.kill('SIGKILL');
    expect(await goneWithin(() => sandboxes(a.tag), 30_000)).toBeDefined();
    await new Promise((r) => setTimeout(r, 2000));
    expect(await sandboxes(b.tag)).toBe(1);
    b.child.proc.kill('SIGKILL');
    expect(await goneWithin(() => sandboxes(b.tag), 30_000)).toBeDefined();
  }, 120_000);
});
