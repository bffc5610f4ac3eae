// berth's Kubernetes backend against kubectl, in one run against the test cluster
// (bash test/setup/setup.sh first): exec round trip vs `kubectl exec`; uploadDir and downloadDir of
// 10,000 small files, uploadFile and downloadFile of one 200 MiB file vs `kubectl cp`, with berth's
// peak memory.
// Ratio = berth median / kubectl median (below 1: berth is faster). Everything it makes carries
// berth's labels and is removed at the end.
import { execFile as execFileCb, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createWriteStream } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import WebSocket from 'ws';
import { createK8sBackend } from '@berth/backend-k8s';

const execFile = promisify(execFileCb);
const STATE = process.env.BERTH_KUBE_STATE ?? '/var/lib/berth-kube';
const KUBECONFIG = `${STATE}/berth.kubeconfig`;
const NAMESPACE = 'berth-test';
const EXEC_REPS = Number(process.env.BENCH_EXEC_REPS ?? 20);
const TRANSFER_REPS = Number(process.env.BENCH_TRANSFER_REPS ?? 3);
const FILES = Number(process.env.BENCH_TREE_FILES ?? 10_000);
const BIG_MIB = Number(process.env.BENCH_BIG_MIB ?? 200);

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const kubectl = (...args) => execFile('kubectl', ['--kubeconfig', KUBECONFIG, '-n', NAMESPACE, ...args], { maxBuffer: 64 << 20 });

/** Peak RSS of this process above its level before `fn`, sampled every 5 ms. */
async function measure(fn) {
  globalThis.gc?.();
  const base = process.memoryUsage().rss;
  let peak = base;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
  const t0 = performance.now();
  try {
    await fn();
  } finally {
    clearInterval(sampler);
  }
  return { ms: performance.now() - t0, deltaMiB: Math.max(0, peak - base) / 2 ** 20 };
}

/** Alternating reps (berth first on even reps, kubectl first on odd ones). */
async function alternate(name, reps, berth, cli) {
  const b = [];
  const c = [];
  let mem = 0;
  for (let i = 0; i < reps; i++) {
    const order = i % 2 ? [cli, berth] : [berth, cli];
    for (const f of order) {
      execFileSync('sync');
      const r = await measure(() => f(i));
      if (f === berth) {
        b.push(r.ms);
        mem = Math.max(mem, r.deltaMiB);
      } else c.push(r.ms);
    }
  }
  const row = { name, reps, berth: median(b), kubectl: median(c), ratio: median(b) / median(c), mem };
  console.log(
    `  ${name}: berth ${row.berth.toFixed(1)} ms, kubectl ${row.kubectl.toFixed(1)} ms, ratio ${row.ratio.toFixed(2)}, berth peak ΔRSS +${mem.toFixed(1)} MiB`,
  );
  return row;
}

/**
 * The plainest client of the same path: one exec of `cat <file>` over a WebSocket (ws, unmasked
 * inside TLS as berth sends), its stdout frames written to a file, no tar at either end.
 */
async function floorDownload(pod, remote, local) {
  const kc = new KubeConfig();
  kc.loadFromFile(KUBECONFIG);
  const query = new URLSearchParams({ container: 'main', stdout: 'true', stderr: 'true' });
  for (const arg of ['cat', remote]) query.append('command', arg);
  const options = { perMessageDeflate: false, maxPayload: 64 << 20, generateMask: (m) => m.fill(0) };
  await kc.applyToHTTPSOptions(options);
  const url = `${kc.getCurrentCluster().server.replace(/^http/, 'ws')}/api/v1/namespaces/${NAMESPACE}/pods/${pod}/exec?${query}`;
  const ws = new WebSocket(url, ['v5.channel.k8s.io'], options);
  const out = createWriteStream(local, { highWaterMark: 4 << 20 });
  ws.on('message', (frame) => {
    if (frame[0] === 1 && !out.write(frame.subarray(1))) {
      ws.pause();
      out.once('drain', () => ws.resume());
    }
  });
  await new Promise((resolve, reject) => {
    ws.once('close', resolve);
    ws.once('error', reject);
  });
  await new Promise((resolve) => out.end(resolve));
}

const work = mkdtempSync(join(tmpdir(), 'berth-k8s-bench-'));
const backend = createK8sBackend({ kubeconfig: { file: KUBECONFIG }, tolerations: [{ key: 'berth.test/fault', operator: 'Exists', effect: 'NoSchedule' }] });
let env;
try {
  const tree = join(work, 'tree');
  for (let d = 0; d < 100; d++) {
    mkdirSync(join(tree, `d${d}`), { recursive: true });
    for (let f = 0; f < FILES / 100; f++) writeFileSync(join(tree, `d${d}`, `f${f}`), randomBytes(1024));
  }
  const big = join(work, 'big.bin');
  writeFileSync(big, randomBytes(BIG_MIB << 20));
  console.log(`berth k8s bench: ${FILES.toLocaleString('en-US')} × 1 KiB files, one ${BIG_MIB} MiB file, namespace ${NAMESPACE}`);
  env = await backend.start({ image: 'berth-test/busybox:latest', network: 'public', labels: { 'berth.bench': '1' } });
  const pod = env.id;
  const rows = [];
  rows.push(
    await alternate(
      'exec true',
      EXEC_REPS,
      () => env.exec(['true']),
      () => kubectl('exec', pod, '--', 'true'),
    ),
  );
  rows.push(
    await alternate(
      `uploadDir ${FILES.toLocaleString('en-US')} × 1 KiB`,
      TRANSFER_REPS,
      (i) => env.uploadDir(tree, `/up/berth-${i}`),
      (i) => kubectl('cp', tree, `${pod}:/up/cli-${i}`),
    ),
  );
  rows.push(
    await alternate(
      `uploadFile ${BIG_MIB} MiB`,
      TRANSFER_REPS,
      async (i) => {
        await env.uploadFile(big, `/up/big-berth-${i}.bin`);
        await env.exec(['rm', '-f', `/up/big-berth-${i}.bin`]);
      },
      async (i) => {
        await kubectl('cp', big, `${pod}:/up/big-cli-${i}.bin`);
        await env.exec(['rm', '-f', `/up/big-cli-${i}.bin`]);
      },
    ),
  );
  // The download sources: the tree uploaded once, and a big file made in the pod.
  await env.uploadDir(tree, '/src/tree');
  await env.exec(['sh', '-c', `dd if=/dev/urandom of=/src/big.bin bs=1M count=${BIG_MIB} 2>/dev/null`]);
  const local = (name, i) => join(work, `${name}-${i}`);
  rows.push(
    await alternate(
      `downloadDir ${FILES.toLocaleString('en-US')} × 1 KiB`,
      TRANSFER_REPS,
      (i) => env.downloadDir('/src/tree', local('dir-berth', i)),
      (i) => kubectl('cp', `${pod}:/src/tree`, local('dir-cli', i)),
    ),
  );
  rows.push(
    await alternate(
      `downloadFile ${BIG_MIB} MiB`,
      TRANSFER_REPS,
      (i) => env.downloadFile('/src/big.bin', local('big-berth', i)),
      (i) => kubectl('cp', `${pod}:/src/big.bin`, local('big-cli', i)),
    ),
  );
  // The floor: the same download as plain `cat` over one exec stream (alternating with berth).
  rows.push(
    await alternate(
      `downloadFile ${BIG_MIB} MiB (floor)`,
      TRANSFER_REPS,
      (i) => env.downloadFile('/src/big.bin', local('big-berth2', i)),
      (i) => floorDownload(pod, '/src/big.bin', local('big-floor', i)),
    ),
  );
  rows.at(-1).name = `downloadFile vs ws cat floor`;
  console.log('\noperation                      reps   berth median   kubectl median   ratio   berth peak ΔRSS');
  for (const r of rows) {
    console.log(
      `${r.name.padEnd(30)} ${String(r.reps).padStart(4)} ${r.berth.toFixed(1).padStart(11)} ms ${r.kubectl.toFixed(1).padStart(13)} ms ${r.ratio.toFixed(2).padStart(7)}   +${r.mem.toFixed(1)} MiB`,
    );
  }
} finally {
  await env?.teardown();
  rmSync(work, { recursive: true, force: true });
}
