#!/usr/bin/env node
// harbor with its own docker environment against harbor with berth's plugin on Docker, same
// tasks, same run: time per trial, a trial's environment start (with and without --ek pool), and
// time per exec (plus berth called directly from Node, to see what the plugin adds).
//
//   npm run bench:harbor      (= npm run build && node bench/harbor.mjs)
//   BENCH_TASKS=8 BENCH_EXECS=100 node bench/harbor.mjs
//
// Needs harbor's venv (test/setup/harbor.sh). harbor's docker environment needs the compose v2
// plugin: built here once from the Go module proxy (github.com/docker/compose/v5 v5.6.0) and
// installed under a DOCKER_CONFIG of this bench's own; and an image with bash: made here from the
// test image plus this machine's bash.
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const TASKS = Number(process.env.BENCH_TASKS ?? 16);
const EXECS = Number(process.env.BENCH_EXECS ?? 100);
const STATE = process.env.BERTH_TEST_STATE ?? '/var/lib/berth-test';
const VENV = process.env.BERTH_HARBOR_VENV ?? join(STATE, 'harbor-venv');
const REPO = fileURLToPath(new URL('..', import.meta.url));
const COMPOSE_VERSION = 'v5.6.0';
const IMAGE = 'berth-bench/bash:latest';

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const sh = (cmd, args, opts = {}) => execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], ...opts });

/** The compose plugin, built once from the module proxy, under a DOCKER_CONFIG of the bench's own. */
function composeConfig() {
  const config = join(STATE, 'bench-docker-config');
  const plugin = join(config, 'cli-plugins', 'docker-compose');
  if (existsSync(plugin)) return config;
  const build = join(STATE, `compose-${COMPOSE_VERSION}`);
  const binary = join(build, 'docker-compose');
  if (!existsSync(binary)) {
    console.log(`building docker compose ${COMPOSE_VERSION} from the Go module proxy (a few minutes, once)`);
    mkdirSync(build, { recursive: true });
    const env = { ...process.env, GOFLAGS: '-mod=mod', GOPATH: join(STATE, 'gopath') };
    if (!existsSync(join(build, 'go.mod'))) sh('go', ['mod', 'init', 'berth-bench-compose'], { cwd: build, env });
    sh('go', ['get', `github.com/docker/compose/v5@${COMPOSE_VERSION}`], { cwd: build, env });
    sh('go', ['build', '-o', binary, 'github.com/docker/compose/v5/cmd'], { cwd: build, env });
  }
  mkdirSync(dirname(plugin), { recursive: true });
  copyFileSync(binary, plugin);
  sh('chmod', ['+x', plugin]);
  return config;
}

/** The test image plus this machine's bash and the libraries it loads (harbor's docker environment runs bash -c). */
function bashImage() {
  if (spawnSync('docker', ['image', 'inspect', IMAGE], { stdio: 'ignore' }).status === 0) return;
  const context = mkdtempSync(join(tmpdir(), 'berth-bench-bash-'));
  const files = ['/bin/bash', ...sh('ldd', ['/bin/bash']).matchAll(/(\/\S+) \(0x/g)].map((m) => (typeof m === 'string' ? m : m[1]));
  for (const file of files) {
    const target = join(context, 'root', file);
    mkdirSync(dirname(target), { recursive: true });
    copyFileSync(file, target);
  }
  writeFileSync(join(context, 'Dockerfile'), 'FROM berth-test/busybox:latest\nCOPY root/ /\n');
  sh('docker', ['build', '-q', '-t', IMAGE, '--label', 'berth.bench=1', context]);
  rmSync(context, { recursive: true, force: true });
}

/** TASKS public-network tasks on the bash image: the oracle writes a file, the verifier checks it. */
function dataset() {
  const dir = mkdtempSync(join(tmpdir(), 'berth-bench-harbor-'));
  for (let i = 0; i < TASKS; i++) {
    const task = join(dir, `task-${i}`);
    mkdirSync(join(task, 'solution'), { recursive: true });
    mkdirSync(join(task, 'tests'));
    writeFileSync(join(task, 'instruction.md'), 'Write the answer.\n');
    writeFileSync(
      join(task, 'task.toml'),
      `version = "1.0"\n\n[verifier]\ntimeout_sec = 60.0\n\n[agent]\ntimeout_sec = 60.0\n\n[environment]\ndocker_image = "${IMAGE}"\n`,
    );
    writeFileSync(join(task, 'solution', 'solve.sh'), `#!/bin/bash\necho ${i} > /tmp/answer\n`, { mode: 0o755 });
    writeFileSync(
      join(task, 'tests', 'test.sh'),
      `#!/bin/bash\nmkdir -p /logs/verifier\n[ "$(cat /tmp/answer)" = ${i} ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n`,
      { mode: 0o755 },
    );
  }
  return dir;
}

/** One `harbor run` over the dataset; its wall time, rewards and each trial's environment start. */
function harborJob(tasks, jobs, name, envArgs, env) {
  const began = performance.now();
  const result = spawnSync(join(VENV, 'bin/harbor'), ['run', '-p', tasks, '-a', 'oracle', '-o', jobs, '--job-name', name, '-y', '-n', '4', ...envArgs], {
    env: { ...process.env, LITELLM_LOCAL_MODEL_COST_MAP: 'True', BERTH_COMMAND: `${process.execPath} ${join(REPO, 'packages/cli/bin/berth.js')}`, ...env },
    encoding: 'utf8',
  });
  const wallMs = performance.now() - began;
  if (result.status !== 0) throw new Error(`harbor run ${name} failed (${result.status}):\n${result.stdout}\n${result.stderr}`);
  const rewards = {};
  const starts = [];
  for (const entry of readdirSync(join(jobs, name), { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const trial = JSON.parse(readFileSync(join(jobs, name, entry.name, 'result.json'), 'utf8'));
    rewards[trial.task_name] = trial.verifier_result?.rewards?.reward ?? trial.exception_info?.exception_type;
    const setup = trial.environment_setup;
    if (setup?.started_at && setup?.finished_at) starts.push(Date.parse(setup.finished_at) - Date.parse(setup.started_at));
  }
  // The plugin's own start (berth's start, or a claim from the warm pool), as its trial log says it.
  const claims = [...readFileSync(join(jobs, name, 'job.log'), 'utf8').matchAll(/berth sandbox \S+ started in ([\d.]+) ms/g)].map((m) => Number(m[1]));
  const warm = claims.slice(4);
  return {
    wallMs,
    perTrialMs: wallMs / TASKS,
    rewards,
    startMs: median(starts),
    claimMs: claims.length ? median(claims) : undefined,
    warmClaimMs: warm.length ? median(warm) : undefined,
  };
}

function execBench(kind) {
  const out = sh(join(VENV, 'bin/python'), [join(REPO, 'bench/harbor-exec.py'), kind, IMAGE, String(EXECS)], {
    env: { ...process.env, DOCKER_CONFIG: composeConfig(), BERTH_COMMAND: `${process.execPath} ${join(REPO, 'packages/cli/bin/berth.js')}` },
  });
  return JSON.parse(out.trim().split('\n').at(-1));
}

async function berthDirect() {
  const { createDockerBackend } = await import('@berth/backend-docker');
  const env = await createDockerBackend().start({ image: IMAGE, network: 'public', labels: { 'berth.bench': '1' } });
  const times = [];
  try {
    for (let i = 0; i < EXECS; i++) {
      const t0 = performance.now();
      await env.exec(['bash', '-c', 'true']);
      times.push(performance.now() - t0);
    }
  } finally {
    await env.teardown();
  }
  return times;
}

if (!existsSync(join(VENV, 'bin/harbor'))) {
  console.error(`no harbor venv at ${VENV}: run bash test/setup/harbor.sh first`);
  process.exit(2);
}
const dockerConfig = composeConfig();
bashImage();
const tasks = dataset();
const jobs = mkdtempSync(join(tmpdir(), 'berth-bench-jobs-'));
try {
  console.log(`harbor 0.25 oracle on ${TASKS} public tasks, 4 at a time; ${EXECS} execs of \`true\` per environment`);
  const docker = harborJob(tasks, jobs, 'harbor-docker', ['-e', 'docker'], { DOCKER_CONFIG: dockerConfig });
  const plugin = harborJob(tasks, jobs, 'berth-plugin', ['-e', 'berth_harbor:BerthEnvironment', '--ek', 'backend=docker'], {});
  const pooled = harborJob(tasks, jobs, 'berth-plugin-pool', ['-e', 'berth_harbor:BerthEnvironment', '--ek', 'backend=docker', '--ek', 'pool=4'], {});
  const same = JSON.stringify(docker.rewards) === JSON.stringify(plugin.rewards) && JSON.stringify(plugin.rewards) === JSON.stringify(pooled.rewards);
  const execDocker = execBench('docker');
  const execPlugin = execBench('berth');
  const direct = await berthDirect();
  const row = (what, ms, base) => console.log(`  ${what.padEnd(44)} ${ms.toFixed(1).padStart(8)} ms   ${(ms / base).toFixed(2)}x`);
  console.log(
    `rewards the same across the three runs: ${same}`,
    same ? '' : JSON.stringify({ docker: docker.rewards, plugin: plugin.rewards, pooled: pooled.rewards }),
  );
  console.log('per trial (job wall time / tasks), as a ratio to harbor docker:');
  row('harbor docker environment', docker.perTrialMs, docker.perTrialMs);
  row('berth plugin (docker)', plugin.perTrialMs, docker.perTrialMs);
  row('berth plugin (docker, pool=4)', pooled.perTrialMs, docker.perTrialMs);
  console.log("a trial's environment start (median of harbor's environment_setup), as a ratio to harbor docker:");
  row('harbor docker environment', docker.startMs, docker.startMs);
  row('berth plugin', plugin.startMs, docker.startMs);
  row('berth plugin, pool=4', pooled.startMs, docker.startMs);
  console.log(
    `  of which berth's start (the plugin's log): ${plugin.claimMs} ms; with pool=4, the claim: ${pooled.claimMs} ms (after the first 4 trials, from a warm pool: ${pooled.warmClaimMs} ms)`,
  );
  console.log('per exec (median), as a ratio to harbor docker:');
  const md = median(execDocker.exec);
  row('harbor docker environment', md, md);
  row('berth plugin', median(execPlugin.exec), md);
  row('berth from Node (no plugin)', median(direct), md);
  console.log(`the plugin adds ${(median(execPlugin.exec) - median(direct)).toFixed(1)} ms per exec over berth called directly`);
} finally {
  rmSync(tasks, { recursive: true, force: true });
  rmSync(jobs, { recursive: true, force: true });
}
