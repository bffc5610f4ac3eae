// 200 sandboxes at once on the local engine (issue 31, item 7): every start succeeds, every
// sandbox runs, every teardown removes its container, and the engine keeps nothing of them: no
// container listed for the run's label (a removal the engine lost shows up there as "Removal In
// Progress") and no containerd-shim left for any of them (1,000 removals at once left ~700 shims
// behind while answering success; berth queues its removals, engine-limits.ts). Network 'none':
// churning bridge endpoints at this rate can deadlock Docker 20.10.24's libnetwork (moby#42545),
// which would wedge the engine for every later test (bench/docker-scale.mjs covers 'public').
import { readdirSync, readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import Docker from 'dockerode';
import { afterAll, expect, it } from 'vitest';
import type { Environment } from '@berth/core';
import { createDockerBackend } from '@berth/backend-docker';

const N = 200;
const IMAGE = 'berth-test/busybox:latest';
const RUN = randomBytes(4).toString('hex');
const LABEL = 'berth.scale-test';
const docker = new Docker();
const envs: Environment[] = [];

const listed = () => docker.listContainers({ all: true, filters: { label: [`${LABEL}=${RUN}`] } });

/** The containerd-shim processes on this machine, by the container id they serve (their -id argument). */
function shimIds(): Set<string> {
  const ids = new Set<string>();
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch {
      continue; // ended while we looked
    }
    const at = argv.indexOf('-id');
    if (argv[0]?.endsWith('containerd-shim-runc-v2') && at >= 0 && argv[at + 1]) ids.add(argv[at + 1]!);
  }
  return ids;
}

/** The shims still serving any of `ids`, polled until there are none or `withinMs` passed (a shim exits just after its task is deleted). */
async function shimsLeft(ids: readonly string[], withinMs: number): Promise<string[]> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const running = shimIds();
    const left = ids.filter((id) => running.has(id));
    if (left.length === 0 || Date.now() >= deadline) return left;
    await new Promise((r) => setTimeout(r, 200));
  }
}

afterAll(async () => {
  await Promise.allSettled(envs.map((env) => env.teardown()));
  for (const info of await listed())
    await docker
      .getContainer(info.Id)
      .remove({ force: true })
      .catch(() => undefined);
});

it(`starts ${N} sandboxes at once and removes them all, leaving nothing on the engine`, { timeout: 240_000 }, async () => {
  const backend = createDockerBackend({ pullPolicy: 'never', labels: { [LABEL]: RUN } });
  const started = Date.now();
  const results = await Promise.allSettled(Array.from({ length: N }, () => backend.start({ image: IMAGE })));
  for (const r of results) if (r.status === 'fulfilled') envs.push(r.value);
  const failures = results.flatMap((r) => (r.status === 'rejected' ? [String(r.reason)] : []));
  expect(failures).toEqual([]);
  const startMs = Date.now() - started;

  const containers = await listed();
  expect(containers.filter((c) => c.State === 'running')).toHaveLength(N);
  const ids = containers.map((c) => c.Id);
  // The probe sees a shim for each while they run, so its "none left" below means something.
  const serving = shimIds();
  expect(ids.filter((id) => !serving.has(id))).toEqual([]);

  const tornDown = Date.now();
  const torn = await Promise.all(envs.map((env) => env.teardown()));
  expect(torn.filter((t) => t.removed)).toHaveLength(N);
  expect(await listed()).toEqual([]);
  expect(await shimsLeft(ids, 15_000)).toEqual([]);
  console.log(`${N} at once: all started in ${(startMs / 1000).toFixed(1)} s, all removed in ${((Date.now() - tornDown) / 1000).toFixed(1)} s`);
});
