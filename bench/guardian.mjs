// What the guardian costs (see the guardian in @berth/core's README), on the local Docker engine:
// - a process's first start() (which starts the guardian) and its later starts, with the guardian
//   and with BERTH_GUARDIAN=0, each in fresh processes, as ratios guardian / off;
// - the time start() is blocked by spawning it (Guardian.ensure(), synchronous);
// - the guardian's memory while it waits.
//   npm run build && node bench/guardian.mjs        (BENCH_REPS, default 8; BENCH_IMAGE)
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const IMAGE = process.env.BENCH_IMAGE ?? 'berth-test/busybox:latest';
const REPS = Number(process.env.BENCH_REPS ?? 8);
const LATER = 5;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Guardian processes whose parent is this one (Linux /proc). */
function myGuardians() {
  const found = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === process.pid && readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('guardian-main.js')) found.push(entry);
    } catch {}
  }
  return found;
}

async function child() {
  const { createDockerBackend } = await import('@berth/backend-docker');
  const backend = createDockerBackend({ pullPolicy: 'never' });
  const spec = { image: IMAGE, network: 'none' };
  const envs = [];
  let t = performance.now();
  envs.push(await backend.start(spec));
  const first = performance.now() - t;
  const later = [];
  for (let i = 0; i < LATER; i++) {
    t = performance.now();
    envs.push(await backend.start(spec));
    later.push(performance.now() - t);
  }
  // Long enough for the guardian to have loaded the backend: its memory while it waits.
  await new Promise((r) => setTimeout(r, 1500));
  const rssKb = myGuardians().map((pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]));
  await Promise.all(envs.map((e) => e.teardown()));
  process.stdout.write(JSON.stringify({ first, later: median(later), rssKb }));
}

async function spawnCost() {
  const { Guardian } = await import(new URL('../packages/core/dist/kit/guardian.js', import.meta.url).href);
  const module = new URL('../packages/backend-docker/dist/guardian.js', import.meta.url);
  const times = [];
  for (let i = 0; i < REPS; i++) {
    // A config of its own each time: one guardian per target and process.
    const guardian = new Guardian('docker', true, () => ({ module, config: { socketPath: '/var/run/docker.sock', bench: i } }));
    const t = performance.now();
    guardian.ensure();
    times.push(performance.now() - t);
  }
  return median(times);
}

if (process.argv[2] === '--child') await child();
else {
  const runs = { on: [], off: [] };
  for (let i = 0; i < REPS; i++) {
    for (const mode of i % 2 ? ['off', 'on'] : ['on', 'off']) {
      const out = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--child'], {
        env: { ...process.env, BERTH_GUARDIAN: mode === 'on' ? '1' : '0' },
        encoding: 'utf8',
      });
      if (out.status !== 0) throw new Error(`bench child failed: ${out.stderr}`);
      runs[mode].push(JSON.parse(out.stdout));
    }
  }
  const pick = (mode, key) => median(runs[mode].map((r) => r[key]));
  const rss = runs.on.flatMap((r) => r.rssKb);
  const row = (what, key) =>
    `| ${what} | ${pick('on', key).toFixed(0)} ms | ${pick('off', key).toFixed(0)} ms | ${(pick('on', key) / pick('off', key)).toFixed(2)} |`;
  console.log(`guardian bench, ${REPS} fresh processes each way, ${IMAGE}\n`);
  console.log('| start() | guardian | BERTH_GUARDIAN=0 | ratio |\n|---|---|---|---|');
  console.log(row('first of the process', 'first'));
  console.log(row(`later (median of ${LATER})`, 'later'));
  console.log(`\nstart() blocked by spawning the guardian (Guardian.ensure()): median ${(await spawnCost()).toFixed(1)} ms`);
  console.log(`guardian memory while waiting (VmRSS): median ${(median(rss) / 1024).toFixed(0)} MB (${rss.length} guardians)`);
}
