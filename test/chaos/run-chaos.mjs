#!/usr/bin/env node
// npm run chaos: 300 harbor tasks through `berth run` on Docker while the monkey kills random
// berth containers, stops the registry for a window and restarts the Docker engine once. Then the
// run's report is checked against the truth computed here (dataset.mjs), and the engine for
// anything left behind. Prints the figures; exits non-zero on any mismatch.
import { execFile, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { PRIVATE_REPO, PRIVATE_TAGS, writeChaosDataset } from './dataset.mjs';
import { Monkey } from './monkey.mjs';

const run = promisify(execFile);
const BIN = fileURLToPath(new URL('../../packages/cli/dist/bin.js', import.meta.url));
const COUNT = Number(process.env.CHAOS_TASKS ?? 300);
const CONCURRENCY = process.env.CHAOS_CONCURRENCY ?? '8';

const root = await mkdtemp(join(tmpdir(), 'berth-chaos-'));
const tasksDir = join(root, 'tasks');
const jobDir = join(root, 'job');
const truth = await writeChaosDataset(tasksDir, COUNT);

// Credentials the run uses for the private tags, pushed here (and removed locally, so they are pulled).
const dockerConfig = join(root, 'docker-config');
await mkdir(dockerConfig, { recursive: true });
await writeFile(
  join(dockerConfig, 'config.json'),
  JSON.stringify({ auths: { '127.0.0.1:5000': { auth: Buffer.from('berth:berth-test-secret').toString('base64') } } }),
);
const privateRefs = PRIVATE_TAGS.map((t) => `${PRIVATE_REPO}:${t}`);
for (const ref of privateRefs) {
  await run('docker', ['tag', 'berth-test/busybox:latest', ref]);
  await run('docker', ['push', ref], { env: { ...process.env, DOCKER_CONFIG: dockerConfig } });
}
await run('docker', ['rmi', ...privateRefs]);

const monkey = new Monkey('chaos-');
const started = Date.now();
const child = spawn(
  process.execPath,
  [BIN, 'run', tasksDir, '--job-dir', jobDir, '--concurrency', CONCURRENCY, '--attempts', process.env.CHAOS_ATTEMPTS ?? '3'],
  {
    env: { ...process.env, DOCKER_CONFIG: dockerConfig },
    stdio: ['ignore', 'pipe', 'inherit'],
  },
);
let output = '';
child.stdout.on('data', (c) => {
  output += c;
  process.stdout.write(c);
});
const exited = new Promise((resolve) => child.on('close', (code) => resolve(code)));

const faults = (async () => {
  const killing = monkey.killContainers();
  await sleep(15_000);
  await monkey.registryOutage(15_000, privateRefs);
  await sleep(10_000);
  await monkey.restartEngine();
  await Promise.race([exited, sleep(20_000)]);
  monkey.stop();
  await killing;
})();
const code = await exited;
monkey.stop();
await faults;
const durationMs = Date.now() - started;

// ---- the truth against the report
const problems = [];
const job = JSON.parse(await readFile(join(jobDir, 'report.json'), 'utf8'));
const byId = new Map(job.tasks.map((t) => [t.taskId, t]));
for (const t of truth) {
  const got = byId.get(t.id);
  if (!got) problems.push(`${t.id}: missing from report.json`);
  else if (got.status !== 'rewarded' || got.reward !== t.reward)
    problems.push(`${t.id}: expected reward ${t.reward}, report says ${got.status} ${got.reward ?? ''} ${got.failureType ?? ''}`);
}
const r = job.report;
if (r.total !== COUNT || r.scored !== COUNT) problems.push(`report: scored ${r.scored}/${r.total}, expected ${COUNT}/${COUNT}`);
if (r.unclassified !== 0 || (r.byCategory.unclassified ?? 0) !== 0) problems.push(`report: ${r.byCategory.unclassified ?? 0} unclassified failed attempt(s)`);
const expectedMean = truth.reduce((s, t) => s + t.reward, 0) / COUNT;
if (Math.abs((r.score?.mean ?? -1) - expectedMean) > 1e-9) problems.push(`report: mean ${r.score?.mean}, truth ${expectedMean}`);
if (!r.valid) problems.push(`report: invalid: ${r.invalidReasons.join('; ')}`);
if (code !== 0) problems.push(`berth run exited ${code}`);
const left = (await run('docker', ['ps', '-aq', '--filter', 'label=berth.managed=true', '--filter', 'label=berth.task'])).stdout.split('\n').filter(Boolean);
const ours = [];
for (const id of left) {
  const { stdout } = await run('docker', ['inspect', '-f', '{{index .Config.Labels "berth.task"}}', id]);
  if (stdout.trim().startsWith('chaos-')) ours.push(id);
}
if (ours.length > 0) problems.push(`${ours.length} container(s) of the run left behind: ${ours.join(' ')}`);
if (monkey.kills === 0 || monkey.engineDownMs === 0 || monkey.registryDownMs === 0) problems.push('the faults did not all happen');

const figures = {
  tasks: COUNT,
  concurrency: Number(CONCURRENCY),
  durationSec: +(durationMs / 1000).toFixed(1),
  attempts: r.attempts,
  retries: r.retries,
  failedAttemptsByType: r.byType,
  failedAttemptsByCategory: r.byCategory,
  containersKilled: monkey.kills,
  registryDownSec: +(monkey.registryDownMs / 1000).toFixed(1),
  engineDownSec: +(monkey.engineDownMs / 1000).toFixed(1),
  meanReward: r.score?.mean,
  truthMean: expectedMean,
  leftBehind: ours.length,
};
console.log('\nchaos figures:', JSON.stringify(figures, null, 2));
await writeFile(join(process.cwd(), 'chaos-figures.json'), JSON.stringify({ figures, problems, faults: monkey.log }, null, 2));
if (problems.length > 0) {
  console.log(`\nCHAOS FAILED (${problems.length} problem(s)); job kept in ${jobDir}:`);
  for (const p of problems.slice(0, 50)) console.log(`  - ${p}`);
  process.exit(1);
}
console.log(
  `\nchaos passed: every task scored as the truth says, no unclassified failure, nothing left behind (${output.split('\n').filter((l) => l.startsWith('[')).length} settled lines)`,
);
await run('docker', ['rmi', '-f', ...privateRefs]).catch(() => undefined);
await rm(root, { recursive: true, force: true });
