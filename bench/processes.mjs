#!/usr/bin/env node
// Detached processes and ports, berth against the standard tools in the same run, printed as ratios
// berth / tool (< 1: berth is faster; goal <= 1.0):
//   - spawn to first output: env.spawn() until its first stdout chunk, against `docker exec -d` of
//     the same command writing to a file, then `docker exec cat` of it until the line is there;
//   - port round trip (Docker): an HTTP GET through env.port() against `docker exec wget` of the
//     same URL inside the container (the way to reach a port of a sandbox on network 'none');
//   - port round trip (Kubernetes, when the test cluster is up): an HTTP GET through env.port()
//     against one through `kubectl port-forward` to the same pod.
//
//   npm run bench:processes        (= npm run build && node bench/processes.mjs)
//   BENCH_REPS=5 node bench/processes.mjs
//
// Sandboxes on network 'none' (Docker) / 'public' (the cluster): nothing leaves this machine.
// Everything made here is torn down on the way out; the kubectl process is ended by its PID.
import { execFile as execFileCb, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { createDockerBackend } from '@berth/backend-docker';
import { createK8sBackend } from '@berth/backend-k8s';

const execFile = promisify(execFileCb);
const REPS = Number(process.env.BENCH_REPS ?? 10);
const IMAGE = process.env.BENCH_IMAGE || 'berth-test/busybox:latest';
const STATE = process.env.BERTH_KUBE_STATE ?? '/var/lib/berth-kube';
const KUBECONFIG = `${STATE}/berth.kubeconfig`;
// kubectl as the admin: berth's Role does not grant pods/portforward (berth does not need it).
const ADMIN_KUBECONFIG = `${STATE}/admin.kubeconfig`;
const NAMESPACE = 'berth-test';
const SERVE = 'mkdir -p /tmp/www && echo pong > /tmp/www/ping && exec httpd -f -p 127.0.0.1:8080 -h /tmp/www';

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const timed = async (fn) => {
  const t = performance.now();
  await fn();
  return performance.now() - t;
};
const row = (what, berth, tool, toolName) =>
  console.log(
    `${what.padEnd(34)} berth ${berth.toFixed(1).padStart(7)} ms   ${toolName} ${tool.toFixed(1).padStart(7)} ms   ratio ${(berth / tool).toFixed(2)}x`,
  );

async function getUntil(url, want) {
  for (let i = 0; i < 200; i++) {
    const text = await fetch(url).then(
      (r) => r.text(),
      () => '',
    );
    if (text === want) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${url} never answered ${JSON.stringify(want)}`);
}

async function docker() {
  const env = await createDockerBackend().start({ image: IMAGE, network: 'none' });
  try {
    const berthSpawn = [];
    const toolSpawn = [];
    for (let i = 0; i < REPS; i++) {
      berthSpawn.push(
        await timed(async () => {
          let first;
          const seen = new Promise((resolve) => (first = resolve));
          const p = await env.spawn(`echo ready-${i}; sleep 60`, { onStdout: () => first() });
          await seen;
          p.detach();
          await p.kill('KILL');
        }),
      );
      toolSpawn.push(
        await timed(async () => {
          await execFile('docker', ['exec', '-d', env.id, 'sh', '-c', `echo ready-${i} > /tmp/bench-${i}; exec sleep 60`]);
          for (;;) {
            const { stdout } = await execFile('docker', ['exec', env.id, 'cat', `/tmp/bench-${i}`]).catch(() => ({ stdout: '' }));
            if (stdout === `ready-${i}\n`) break;
          }
        }),
      );
    }
    row('spawn to first output (Docker)', median(berthSpawn), median(toolSpawn), 'docker exec -d + cat');

    await env.spawn(SERVE);
    const forward = await env.port(8080);
    const url = `http://${forward.host}:${forward.port}/ping`;
    await getUntil(url, 'pong\n');
    const berthGet = [];
    const toolGet = [];
    for (let i = 0; i < REPS; i++) {
      berthGet.push(await timed(() => getUntil(url, 'pong\n')));
      toolGet.push(await timed(() => execFile('docker', ['exec', env.id, 'wget', '-qO-', 'http://127.0.0.1:8080/ping'])));
    }
    row('port round trip (Docker)', median(berthGet), median(toolGet), 'docker exec wget    ');
  } finally {
    await env.teardown();
  }
}

async function kubernetes() {
  if (!existsSync(KUBECONFIG)) {
    console.log(`port round trip (Kubernetes)       skipped: no test cluster (${KUBECONFIG})`);
    return;
  }
  const backend = createK8sBackend({ kubeconfig: { file: KUBECONFIG }, namespace: NAMESPACE });
  const env = await backend.start({ image: IMAGE, network: 'public' });
  let kubectl;
  try {
    await env.spawn(SERVE);
    const forward = await env.port(8080);
    const url = `http://${forward.host}:${forward.port}/ping`;
    await getUntil(url, 'pong\n');
    kubectl = spawn('kubectl', ['--kubeconfig', ADMIN_KUBECONFIG, '-n', NAMESPACE, 'port-forward', `pod/${env.id}`, ':8080'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const local = await new Promise((resolve, reject) => {
      kubectl.stdout.on('data', (d) => {
        const m = /127\.0\.0\.1:(\d+) ->/.exec(String(d));
        if (m) resolve(Number(m[1]));
      });
      let said = '';
      kubectl.stderr.on('data', (d) => (said += d));
      kubectl.once('exit', (code) => reject(new Error(`kubectl port-forward exited ${code}: ${said}`)));
    });
    const kubeUrl = `http://127.0.0.1:${local}/ping`;
    await getUntil(kubeUrl, 'pong\n');
    const berthGet = [];
    const toolGet = [];
    for (let i = 0; i < REPS; i++) {
      berthGet.push(await timed(() => getUntil(url, 'pong\n')));
      toolGet.push(await timed(() => getUntil(kubeUrl, 'pong\n')));
    }
    row('port round trip (Kubernetes)', median(berthGet), median(toolGet), 'kubectl port-forward');
  } finally {
    if (kubectl?.pid && kubectl.exitCode === null) process.kill(kubectl.pid, 'SIGTERM');
    await env.teardown();
  }
}

await docker();
await kubernetes();
