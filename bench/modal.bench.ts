// berth's Modal backend through the simulator, next to berth's Docker backend on the same engine
// (bash test/setup/setup.sh first): exec round trip, and uploadDir of 2,000 small files. Every
// Modal sandbox is a container on this engine, so the difference is what the Modal path adds: the
// gRPC wire layer, the router's offset reads, and the simulator itself. Ratio = Modal (simulated)
// median / Docker median. Run: npm run bench:modal (a vitest file, so the TypeScript simulator
// needs no build).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, it } from 'vitest';
import { createDockerBackend } from '@berth/backend-docker';
import { createModalBackend } from '@berth/backend-modal';
import { ModalSimulator } from '@berth/test-support/modal-sim';

const EXEC_REPS = Number(process.env.BENCH_EXEC_REPS ?? 30);
const TRANSFER_REPS = Number(process.env.BENCH_TRANSFER_REPS ?? 5);
const FILES = Number(process.env.BENCH_TREE_FILES ?? 2000);
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

const sim = await ModalSimulator.start();
const modal = createModalBackend({ serverUrl: sim.url, ca: sim.ca, tokenId: sim.tokenId, tokenSecret: sim.tokenSecret, modalConfigEnv: {} });
const docker = createDockerBackend({ transfers: 'exec' });
const tree = mkdtempSync(join(tmpdir(), 'berth-bench-modal-'));
for (let i = 0; i < FILES; i++) {
  const sub = join(tree, `d${i % 20}`);
  mkdirSync(sub, { recursive: true });
  writeFileSync(join(sub, `f${i}.txt`), 'x'.repeat(1024));
}
afterAll(async () => {
  await modal.close();
  await sim.close();
  rmSync(tree, { recursive: true, force: true });
});

it('Modal (simulated) next to Docker: exec round trip and uploadDir', { timeout: 600_000 }, async () => {
  const spec = { image: 'berth-test/busybox:latest', network: 'none' as const };
  await using onModal = await modal.start(spec);
  await using onDocker = await docker.start(spec);
  const rows: string[] = [];
  const time = async (fn: () => Promise<unknown>) => {
    const t0 = performance.now();
    await fn();
    return performance.now() - t0;
  };
  const compare = async (name: string, reps: number, run: (env: typeof onModal, i: number) => Promise<unknown>) => {
    const m: number[] = [];
    const d: number[] = [];
    for (let i = 0; i < reps; i++) {
      // Alternating order, so that neither side always runs on a warmer machine.
      if (i % 2) {
        d.push(await time(() => run(onDocker, i)));
        m.push(await time(() => run(onModal, i)));
      } else {
        m.push(await time(() => run(onModal, i)));
        d.push(await time(() => run(onDocker, i)));
      }
    }
    rows.push(
      `${name.padEnd(40)} ${String(reps).padStart(4)}   ${median(m).toFixed(1).padStart(10)} ms   ${median(d).toFixed(1).padStart(10)} ms   ${(median(m) / median(d)).toFixed(2).padStart(5)}`,
    );
  };
  await compare('exec true', EXEC_REPS, (env) => env.exec(['true']));
  await compare(`uploadDir ${FILES.toLocaleString('en')} × 1 KiB (over exec)`, TRANSFER_REPS, (env, i) => env.uploadDir(tree, `/tmp/up${i}`));
  console.log(
    [
      '',
      'berth Modal backend through the simulator vs berth Docker backend (transfers over exec), same engine',
      `${'operation'.padEnd(40)} reps   modal median    docker median   ratio`,
      ...rows,
      '',
    ].join('\n'),
  );
});
