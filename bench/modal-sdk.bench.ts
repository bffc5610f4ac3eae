// berth's Modal backend next to Modal's official Python SDK (the pinned venv test/setup/setup.sh
// builds), both against one simulator in one run, the same operations: a sandbox created and its
// first command answered; an exec round trip (echo, output read, exit); 50 sandboxes started at
// once. Ratio = berth median / SDK median (below 1: berth is faster). The halves run one after the
// other, never at once. Run: npm run bench:modal-sdk (a vitest file: the simulator is TypeScript).
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, it } from 'vitest';
import { createModalBackend } from '@berth/backend-modal';
import { ModalSimulator } from '@berth/test-support/modal-sim';
import { SDK_PYTHON, assertSdkVenv, sdkEnv } from '../packages/backend-modal/test/sdk/sdk-python.js';

const EXEC_REPS = Number(process.env.BENCH_EXEC_REPS ?? 20);
const CONCURRENT = Number(process.env.BENCH_CONCURRENT ?? 50);
const IMAGE = process.env.BENCH_IMAGE ?? 'berth-test/busybox:latest';
type Samples = Record<'create_first_exec' | 'exec_round_trip' | 'concurrent_starts', number[]>;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

assertSdkVenv();
const sim = await ModalSimulator.start();
const dir = mkdtempSync(join(tmpdir(), 'berth-bench-modal-sdk-'));
afterAll(async () => {
  await sim.close();
  rmSync(dir, { recursive: true, force: true });
});

async function berthHalf(): Promise<Samples> {
  const modal = createModalBackend({ ...sim.clientOptions(), guardian: false });
  const spec = { image: IMAGE, network: 'public' as const };
  try {
    // Untimed: the image is built once, as the SDK's half does before timing.
    await (await modal.start(spec)).teardown();
    let t0 = performance.now();
    const env = await modal.start(spec);
    await env.exec(['true']);
    const out: Samples = { create_first_exec: [performance.now() - t0], exec_round_trip: [], concurrent_starts: [] };
    for (let i = 0; i < EXEC_REPS; i++) {
      t0 = performance.now();
      if ((await env.exec(['echo', 'hi'])).stdout !== 'hi\n') throw new Error('echo said something else');
      out.exec_round_trip.push(performance.now() - t0);
    }
    await env.teardown();
    t0 = performance.now();
    const many = await Promise.all(Array.from({ length: CONCURRENT }, () => modal.start(spec)));
    out.concurrent_starts.push(performance.now() - t0);
    await Promise.all(many.map((e) => e.teardown()));
    return out;
  } finally {
    await modal.close();
  }
}

function sdkHalf(): Promise<Samples> {
  const script = new URL('./modal-sdk.py', import.meta.url).pathname;
  const env = { ...sdkEnv(sim, dir), BENCH_EXEC_REPS: String(EXEC_REPS), BENCH_CONCURRENT: String(CONCURRENT), BENCH_IMAGE: IMAGE };
  return new Promise((resolve, reject) =>
    execFile(SDK_PYTHON, [script], { env, maxBuffer: 16 * 1024 * 1024, timeout: 600_000 }, (error, stdout, stderr) =>
      error ? reject(new Error(`the SDK's half failed: ${error.message}\n${stderr.slice(-4000)}`)) : resolve(JSON.parse(stdout) as Samples),
    ),
  );
}

it('berth and the Python SDK, same operations, same simulator', { timeout: 1_200_000 }, async () => {
  const berth = await berthHalf();
  const sdk = await sdkHalf();
  const row = (name: string, key: keyof Samples) => {
    const b = median(berth[key]);
    const s = median(sdk[key]);
    return `${name.padEnd(44)} ${String(berth[key].length).padStart(4)}   ${b.toFixed(1).padStart(9)} ms   ${s.toFixed(1).padStart(9)} ms   ${(b / s).toFixed(2).padStart(5)}`;
  };
  console.log(
    [
      '',
      "berth's Modal backend vs Modal's Python SDK (pinned), one simulator, one run",
      `${'operation'.padEnd(44)} reps   berth median    SDK median   ratio`,
      row('create + first exec answered', 'create_first_exec'),
      row('exec round trip (echo hi)', 'exec_round_trip'),
      row(`${CONCURRENT} sandboxes started at once (all running)`, 'concurrent_starts'),
      '',
    ].join('\n'),
  );
});
