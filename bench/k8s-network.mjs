// How long network 'none' takes to hold on Kubernetes, in one run against the test cluster (bash
// test/setup/setup.sh first: kube-router enforces NetworkPolicy there). berth's setNetwork (relabel
// the pod, then probe from inside until the new state holds) against the same by hand: `kubectl
// label` then `kubectl exec ... nc` until the listener is cut off (or reached again). Ratio = berth
// median / kubectl median. The listener sits on this machine's address on the pods' host-only
// bridge; every pod carries berth's labels and is removed at the end.
import { execFile as execFileCb } from 'node:child_process';
import { createServer } from 'node:net';
import { promisify } from 'node:util';
import { createK8sBackend } from '@berth/backend-k8s';

const execFile = promisify(execFileCb);
const STATE = process.env.BERTH_KUBE_STATE ?? '/var/lib/berth-kube';
const KUBECONFIG = `${STATE}/berth.kubeconfig`;
const NAMESPACE = 'berth-test';
const BRIDGE = '10.244.0.1'; // test/kube/setup.sh's CNI gateway
const REPS = Number(process.env.BENCH_REPS ?? 5);
const LIMIT_MS = 30_000;

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const kubectl = (...args) => execFile('kubectl', ['--kubeconfig', KUBECONFIG, '-n', NAMESPACE, ...args]);

const server = createServer((socket) => socket.end());
await new Promise((resolve) => server.listen(0, BRIDGE, resolve));
const { port } = server.address();

/** By hand: relabel, then connect from inside with kubectl exec until `want` holds. */
async function byHand(pod, mode) {
  const want = mode === 'public';
  const t0 = performance.now();
  await kubectl('label', 'pod', pod, `berth.network=${mode}`, '--overwrite');
  for (;;) {
    const reached = await kubectl('exec', pod, '--', 'nc', '-w', '2', BRIDGE, String(port)).then(
      () => true,
      () => false,
    );
    if (reached === want) return performance.now() - t0;
    if (performance.now() - t0 > LIMIT_MS) throw new Error(`by hand: ${mode} did not hold within ${LIMIT_MS} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const backend = createK8sBackend({ kubeconfig: { file: KUBECONFIG }, namespace: NAMESPACE, networkPolicy: { probe: { host: BRIDGE, port } } });
const t0 = performance.now();
const env = await backend.start({ image: 'berth-test/busybox:latest', network: 'none', networkSwitch: true });
const firstStart = performance.now() - t0;
const times = { berth: { public: [], none: [] }, kubectl: { public: [], none: [] } };
try {
  for (let i = 0; i < REPS; i++) {
    // Alternate who goes first; each contender switches to public and back to none.
    const order = i % 2 ? ['kubectl', 'berth'] : ['berth', 'kubectl'];
    for (const who of order) {
      for (const mode of ['public', 'none']) {
        const t = performance.now();
        const ms = who === 'berth' ? await env.setNetwork(mode).then(() => performance.now() - t) : await byHand(env.id, mode);
        times[who][mode].push(ms);
      }
    }
  }
} finally {
  await env.teardown();
  server.close();
}

const rows = ['public', 'none'].map((mode) => {
  const b = median(times.berth[mode]);
  const k = median(times.kubectl[mode]);
  return `| setNetwork('${mode}') until it holds inside | ${b.toFixed(0)} ms | ${k.toFixed(0)} ms | ${(b / k).toFixed(2)} |`;
});
console.log(`first start on 'none' (pod start + enforcement proved from inside): ${firstStart.toFixed(0)} ms`);
console.log(['| what | berth median | kubectl label + exec median | ratio |', '|---|---|---|---|', ...rows].join('\n'));
