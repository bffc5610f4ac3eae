// The faults: kill random berth containers of the run, stop the registry for a window, restart
// the Docker engine once. Only processes this machine's setup started (their PID files) are
// stopped, and started again exactly as test/setup/setup.sh starts them.
import { execFile, spawn } from 'node:child_process';
import { openSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);
const STATE = process.env.BERTH_TEST_STATE ?? '/var/lib/berth-test';

async function docker(...args) {
  return (await run('docker', args, { timeout: 30_000 })).stdout;
}

async function engineUp() {
  try {
    await run('docker', ['info'], { timeout: 5000 });
    return true;
  } catch {
    return false;
  }
}

async function pidFrom(file) {
  const pid = Number((await readFile(join(STATE, file), 'utf8')).trim());
  if (!Number.isInteger(pid) || pid <= 1) throw new Error(`no usable pid in ${file}`);
  return pid;
}

async function waitGone(pid, ms) {
  for (let t = 0; t < ms; t += 100) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await sleep(100);
  }
  throw new Error(`process ${pid} did not exit`);
}

function startDetached(command, args, log, pidFile) {
  const out = openSync(join(STATE, log), 'a');
  const child = spawn(command, args, { detached: true, stdio: ['ignore', out, out] });
  child.unref();
  return writeFile(join(STATE, pidFile), `${child.pid}\n`);
}

export class Monkey {
  kills = 0;
  killFailures = 0;
  registryDownMs = 0;
  engineDownMs = 0;
  log = [];
  #stopped = false;
  #t0 = Date.now();

  constructor(taskLabelPrefix) {
    this.prefix = taskLabelPrefix;
  }

  note(text) {
    const line = `[chaos +${((Date.now() - this.#t0) / 1000).toFixed(1)}s] ${text}`;
    this.log.push(line);
    process.stderr.write(`${line}\n`);
  }

  stop() {
    this.#stopped = true;
  }

  /** Every 1.5 to 4 s, `docker kill` one running container of this run's tasks. */
  async killContainers() {
    while (!this.#stopped) {
      await sleep(1500 + Math.random() * 2500);
      if (this.#stopped || !(await engineUp())) continue;
      try {
        const lines = (await docker('ps', '--filter', 'label=berth.managed=true', '--format', '{{.ID}} {{.Label "berth.task"}}')).split('\n').filter(Boolean);
        const ours = lines.map((l) => l.split(' ')).filter(([, task]) => task?.startsWith(this.prefix));
        if (ours.length === 0) continue;
        const [id, task] = ours[Math.floor(Math.random() * ours.length)];
        await docker('kill', id);
        this.kills++;
        this.note(`killed the container of ${task}`);
      } catch (_error) {
        this.killFailures++;
      }
    }
  }

  /** Stop the registry for `ms`, with the private images removed locally so pulls must reach it. */
  async registryOutage(ms, privateRefs) {
    const pid = await pidFrom('registry.pid');
    process.kill(pid, 'SIGTERM');
    await waitGone(pid, 10_000);
    const down = Date.now();
    this.note(`registry stopped (pid ${pid})`);
    await docker('rmi', '-f', ...privateRefs).catch(() => undefined);
    await sleep(ms);
    await startDetached('docker-registry', ['serve', join(STATE, 'registry.yml')], 'registry.log', 'registry.pid');
    for (let i = 0; i < 60; i++) {
      const r = await fetch('http://127.0.0.1:5000/v2/').then(
        (x) => x.status,
        () => 0,
      );
      if (r === 401) break;
      await sleep(250);
    }
    this.registryDownMs = Date.now() - down;
    this.note(`registry back after ${(this.registryDownMs / 1000).toFixed(1)} s`);
  }

  /** Stop dockerd (its running containers die with it) and start it again. */
  async restartEngine() {
    const pid = await pidFrom('dockerd.pid');
    const down = Date.now();
    process.kill(pid, 'SIGTERM');
    this.note(`dockerd stopping (pid ${pid})`);
    await waitGone(pid, 60_000);
    await startDetached('dockerd', [], 'dockerd.log', 'dockerd.pid');
    for (let i = 0; i < 120 && !(await engineUp()); i++) await sleep(500);
    this.engineDownMs = Date.now() - down;
    this.note(`dockerd back after ${(this.engineDownMs / 1000).toFixed(1)} s`);
  }
}
