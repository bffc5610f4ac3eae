// Warm pools on Modal, through the simulator (bash test/setup/setup.sh first): time until the first
// command runs from a cold start (backend.start + exec) and from a filled warm pool (claim + exec),
// and a claim alone (its alive check is one SandboxWait poll), p50 and p99; the ratio is pooled /
// cold, measured in the same run. Run: npm run bench:modal-pools.
import { afterAll, it } from 'vitest';
import { createModalBackend } from '@berth/backend-modal';
import { ModalSimulator } from '@berth/test-support/modal-sim';

const COLD = Number(process.env.BENCH_POOL_COLD ?? 10);
const CLAIMS = Number(process.env.BENCH_POOL_CLAIMS ?? 40);
const SIZE = Number(process.env.BENCH_POOL_SIZE ?? 10);
const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;

const sim = await ModalSimulator.start();
const modal = createModalBackend({ serverUrl: sim.url, ca: sim.ca, tokenId: sim.tokenId, tokenSecret: sim.tokenSecret, modalConfigEnv: {} });
afterAll(async () => {
  await modal.close();
  await sim.close();
});

const time = async (fn: () => Promise<unknown>) => {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
};

it('Modal (simulated): cold start against a warm pool claim', { timeout: 600_000 }, async () => {
  const spec = { image: 'berth-test/busybox:latest', network: 'none' as const };
  const cold: number[] = [];
  for (let i = 0; i < COLD; i++) {
    let env: Awaited<ReturnType<typeof modal.start>> | undefined;
    cold.push(await time(async () => (env = await modal.start(spec)).exec(['true'])));
    await env?.teardown();
  }
  const pooled: number[] = [];
  const claimOnly: number[] = [];
  const pool = modal.pool(spec, { size: SIZE });
  try {
    await pool.fill();
    for (let i = 0; i < CLAIMS; i++) {
      await pool.fill();
      let env: Awaited<ReturnType<typeof pool.claim>> | undefined;
      pooled.push(await time(async () => (env = await pool.claim()).exec(['true'])));
      await env?.teardown();
    }
    for (let i = 0; i < Math.min(CLAIMS, 20); i++) {
      await pool.fill();
      let env: Awaited<ReturnType<typeof pool.claim>> | undefined;
      claimOnly.push(await time(async () => (env = await pool.claim())));
      await env?.teardown();
    }
  } finally {
    await pool.close();
  }
  const row = (label: string, xs: number[], ref?: number[]) =>
    `  ${label.padEnd(40)} p50 ${quantile(xs, 0.5).toFixed(1).padStart(8)} ms  p99 ${quantile(xs, 0.99).toFixed(1).padStart(8)} ms  (n=${xs.length})` +
    (ref ? `   ${(quantile(xs, 0.5) / quantile(ref, 0.5)).toFixed(3)}x / ${(quantile(xs, 0.99) / quantile(ref, 0.99)).toFixed(3)}x cold` : '');
  console.log(
    [
      'modal (simulated): time until the first command runs',
      row('berth cold start (start + exec)', cold),
      row(`berth warm pool of ${SIZE} (claim + exec)`, pooled, cold),
      row('berth claim alone (alive check included)', claimOnly),
    ].join('\n'),
  );
});
