// The guardian against the real engine: a process that started sandboxes and is then killed
// (SIGKILL, or SIGTERM with no handler: Node exits at once) leaves nothing within 30 s, and of two
// such processes on one host (one BERTH_SESSION) only the killed one's sandboxes go.
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { createDockerBackend } from '@berth/backend-docker';
import { goneWithin, guardiansOf, startChild, startWorkerChild, type GuardedChild } from '@berth/test-support/guardian-children';

const docker = new Docker();
const children: GuardedChild[] = [];
const dirs: string[] = [];
const tags: string[] = [];

const newTag = () => {
  const tag = `g-${randomBytes(4).toString('hex')}`;
  tags.push(tag);
  return tag;
};
const containers = async (tag: string) => (await docker.listContainers({ all: true, filters: { label: [`berth.test-guardian=${tag}`] } })).length;

afterAll(async () => {
  for (const child of children) child.proc.kill('SIGKILL');
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  for (const tag of tags) {
    for (const info of await docker.listContainers({ all: true, filters: { label: [`berth.test-guardian=${tag}`] } }))
      await docker
        .getContainer(info.Id)
        .remove({ force: true })
        .catch(() => undefined);
    for (const network of await docker.listNetworks({ filters: { label: [`berth.test-guardian=${tag}`] } }))
      await docker
        .getNetwork(network.Id)
        .remove()
        .catch(() => undefined);
  }
});

/** Polls the guardian's log until it holds `text`; throws with the log if it never does. */
async function untilLogged(log: string, text: string, withinMs: number): Promise<void> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const content = await readFile(log, 'utf8').catch(() => '');
    if (content.includes(text)) return;
    if (Date.now() > deadline) throw new Error(`the guardian never logged "${text}" within ${withinMs} ms; its log: ${content}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const run = (count: number, env?: Record<string, string>, ownGroup = false) => {
  const tag = newTag();
  const child = startChild('docker', count, tag, env, ownGroup);
  children.push(child);
  return { tag, child };
};

describe('docker guardian', () => {
  // SIGTERM and SIGINT: the child has no handler, so Node ends at once (the exit signal says so).
  for (const signal of ['SIGKILL', 'SIGTERM', 'SIGINT'] as const) {
    it(`a process killed with ${signal} leaves none of its 3 sandboxes within 30 s`, async () => {
      const { tag, child } = run(3);
      await child.ready;
      expect(await containers(tag)).toBe(3);
      child.proc.kill(signal);
      expect(await child.exited).toBe(signal);
      const took = await goneWithin(() => containers(tag), 30_000);
      console.log(`docker guardian, ${signal}: 3 sandboxes gone ${took} ms after the kill`);
      expect(took).toBeDefined();
    }, 90_000);
  }

  it("a killed process's warm pool goes too: 2 claimed-or-started sandboxes and 3 idle pooled ones, none left within 30 s", async () => {
    const { tag, child } = run(2, { GUARDIAN_CHILD_POOL: '3' });
    await child.ready;
    expect(await containers(tag)).toBe(5);
    child.proc.kill('SIGKILL');
    expect(await child.exited).toBe('SIGKILL');
    expect(await goneWithin(() => containers(tag), 30_000)).toBeDefined();
  }, 90_000);

  it("a killed process's sandboxes with services go whole: their service containers and their networks, none left within 30 s", async () => {
    const services = {
      db: { image: 'berth-test/busybox:latest', command: ['sleep', '100000'] },
      api: { image: 'berth-test/busybox:latest', command: ['sleep', '100000'] },
    };
    const { tag, child } = run(2, { GUARDIAN_CHILD_SPEC: JSON.stringify({ services }) });
    await child.ready;
    // The labels the spec gave the sandbox are its services' and its network's too.
    const networks = async () => (await docker.listNetworks({ filters: { label: [`berth.test-guardian=${tag}`] } })).length;
    expect(await containers(tag)).toBe(6);
    expect(await networks()).toBe(2);
    child.proc.kill('SIGKILL');
    expect(await child.exited).toBe('SIGKILL');
    expect(await goneWithin(async () => (await containers(tag)) + (await networks()), 30_000)).toBeDefined();
  }, 90_000);

  it('a process killed in the middle of its starts (creates in flight) leaves nothing within 30 s', async () => {
    const { tag, child } = run(6);
    // Killed as soon as the engine has the first of its containers, the others being made.
    while ((await containers(tag)) === 0) await new Promise((r) => setTimeout(r, 10));
    child.proc.kill('SIGKILL');
    await child.exited;
    expect(await goneWithin(() => containers(tag), 30_000)).toBeDefined();
    // And nothing comes back: a create that landed late is caught by the guardian's second look.
    await new Promise((r) => setTimeout(r, 7000));
    expect(await containers(tag)).toBe(0);
  }, 90_000);

  it("a SIGKILL of the process's whole group (a Ctrl-C, a CI job's end) does not take the guardian along", async () => {
    const { tag, child } = run(2, {}, true);
    await child.ready;
    process.kill(-child.proc.pid!, 'SIGKILL');
    expect(await child.exited).toBe('SIGKILL');
    expect(await goneWithin(() => containers(tag), 30_000)).toBeDefined();
  }, 90_000);

  it('two processes on one host and one session: killing one removes only its own sandboxes', async () => {
    const a = run(2);
    const b = run(2);
    await Promise.all([a.child.ready, b.child.ready]);
    a.child.proc.kill('SIGKILL');
    expect(await goneWithin(() => containers(a.tag), 30_000)).toBeDefined();
    // b's guardian saw nothing end; a's swept only a's pid.
    await new Promise((r) => setTimeout(r, 2000));
    expect(await containers(b.tag)).toBe(2);
    b.child.proc.kill('SIGKILL');
    expect(await goneWithin(() => containers(b.tag), 30_000)).toBeDefined();
  }, 120_000);

  it('a worker thread that started the guardian ends while its process lives on: nothing is removed until the process ends', async () => {
    const tag = newTag();
    const dir = await mkdtemp(join(tmpdir(), 'berth-guardian-log-'));
    dirs.push(dir);
    const log = join(dir, 'guardian.log');
    // The child (and so its guardian) inherits the log's path; set only while it is spawned.
    const previous = process.env.BERTH_GUARDIAN_LOG;
    process.env.BERTH_GUARDIAN_LOG = log;
    let child: GuardedChild;
    try {
      child = startWorkerChild(tag);
    } finally {
      if (previous === undefined) delete process.env.BERTH_GUARDIAN_LOG;
      else process.env.BERTH_GUARDIAN_LOG = previous;
    }
    children.push(child);
    await child.ready;
    const pid = child.proc.pid!;
    // The worker's end closed the guardian's pipe: the guardian says it saw the process live on and
    // watches its pid instead of sweeping. It is still there, and so is the sandbox.
    await untilLogged(log, `the pipe closed while pid ${pid} runs`, 15_000);
    expect(await guardiansOf(pid)).toHaveLength(1);
    expect(await containers(tag)).toBe(1);
    expect(await readFile(log, 'utf8')).not.toContain(`pid ${pid} ended`);
    child.proc.kill('SIGKILL');
    expect(await goneWithin(() => containers(tag), 30_000)).toBeDefined();
    // The guardian is what removed it.
    await untilLogged(log, `pid ${pid} ended: removed 1`, 5_000);
  }, 90_000);

  it('one guardian per process and engine, however many backend instances reach it; none with guardian: false', async () => {
    const tag = newTag();
    const spec = { image: 'berth-test/busybox:latest', network: 'none' as const, labels: { 'berth.test-guardian': tag } };
    const off = createDockerBackend({ guardian: false });
    await (await off.start(spec)).teardown();
    expect(await guardiansOf(process.pid)).toEqual([]);
    const [first, second] = [createDockerBackend(), createDockerBackend()];
    const envs = await Promise.all([first.start(spec), second.start(spec), first.start(spec)]);
    expect(await guardiansOf(process.pid)).toHaveLength(1);
    await Promise.all(envs.map((e) => e.teardown()));
  });

  it('BERTH_GUARDIAN=0: a killed process leaves its sandboxes, for sweep', async () => {
    const { tag, child } = run(1, { BERTH_GUARDIAN: '0' });
    await child.ready;
    // No guardian to remove anything (the probe finds one per process in the test above).
    expect(await guardiansOf(child.proc.pid!)).toEqual([]);
    const [left] = await docker.listContainers({ all: true, filters: { label: [`berth.test-guardian=${tag}`] } });
    child.proc.kill('SIGKILL');
    await child.exited;
    expect(await containers(tag)).toBe(1);
    const report = await createDockerBackend().sweep();
    expect(report.removed).toContain(left?.Names[0]?.slice(1));
    expect(await containers(tag)).toBe(0);
  }, 90_000);
});
