#!/usr/bin/env node
// The main job, end to end: run a harbor-layout task in a Docker sandbox through berth.
// Preflight, start, upload the oracle solution and run it, upload the tests and run them, read
// /logs/verifier/reward.txt, tear down; print the reward and how long each step took.
//
//   node examples/quickstart.mjs [task-dir]     (default: examples/tasks/hello-world)
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { classifyFailure } from '@berth/core';
import { createDockerBackend } from '@berth/backend-docker';

const taskDir = resolve(process.argv[2] ?? new URL('./tasks/hello-world', import.meta.url).pathname);
const task = parseToml(await readFile(join(taskDir, 'task.toml'), 'utf8'));
const envConfig = task.environment ?? {};
const spec = {
  image: envConfig.docker_image,
  resources: { cpus: envConfig.cpus ?? 1, memoryMb: envConfig.memory_mb ?? 1024 },
  network: 'none',
  timeouts: { startupMs: 120_000 },
  labels: { 'berth.example': 'quickstart' },
};

const timings = [];
async function step(name, fn) {
  const t0 = performance.now();
  try {
    return await fn();
  } finally {
    timings.push([name, performance.now() - t0]);
  }
}

const backend = createDockerBackend();
const preflight = await step('preflight', () => backend.preflight(spec));
if (!preflight.ok) {
  console.error('preflight failed:');
  for (const c of preflight.checks) console.error(`  ${c.status.padEnd(4)} ${c.name}: ${c.message}`);
  process.exit(2);
}

let reward;
let failure;
const env = backend.environment(spec);
try {
  await step('start', () => env.start());
  await step('upload solution', () => env.uploadDir(join(taskDir, 'solution'), '/solution'));
  const agent = await step('run oracle', () =>
    env.exec(['sh', '/solution/solve.sh'], { timeoutMs: (task.agent?.timeout_sec ?? 600) * 1000 }),
  );
  if (agent.exitCode !== 0) console.error(`oracle exited ${agent.exitCode}: ${agent.stderr}`);
  await step('upload tests', () => env.uploadDir(join(taskDir, 'tests'), '/tests'));
  const verifier = await step('run tests', () =>
    env.exec(['sh', '/tests/test.sh'], { timeoutMs: (task.verifier?.timeout_sec ?? 600) * 1000 }),
  );
  process.stdout.write(verifier.stdout);
  const out = await mkdtemp(join(tmpdir(), 'berth-quickstart-'));
  await step('download reward', () => env.downloadFile('/logs/verifier/reward.txt', join(out, 'reward.txt')));
  reward = Number((await readFile(join(out, 'reward.txt'), 'utf8')).trim());
} catch (error) {
  failure = classifyFailure(error);
} finally {
  await step('teardown', () => env.teardown());
}

const total = timings.reduce((sum, [, ms]) => sum + ms, 0);
console.log(`\ntask     ${taskDir}`);
console.log(`image    ${spec.image}`);
for (const [name, ms] of timings) console.log(`  ${name.padEnd(16)} ${ms.toFixed(1).padStart(8)} ms`);
console.log(`  ${'total'.padEnd(16)} ${total.toFixed(1).padStart(8)} ms`);
if (failure) {
  console.log(`\nno reward: ${failure.category} (${failure.type}): ${failure.message}`);
  process.exit(1);
}
console.log(`\nreward   ${reward}`);
process.exit(reward === 1 ? 0 : 1);
