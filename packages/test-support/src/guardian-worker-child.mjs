// For the guardian test of a live process whose worker thread ended: a worker thread starts one
// Docker sandbox (label berth.test-guardian=<tag>) and ends without tearing it down; the process
// lives on. Prints "ready" once the worker has ended.
//   node packages/test-support/src/guardian-worker-child.mjs <tag>
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { createDockerBackend } from '@berth/backend-docker';

if (isMainThread) {
  const worker = new Worker(new URL(import.meta.url), { workerData: process.argv[2] });
  worker.on('error', (error) => {
    process.stderr.write(`${error.stack}\n`);
    process.exit(1);
  });
  worker.on('exit', () => process.stdout.write('ready\n'));
  setInterval(() => undefined, 60_000);
} else {
  await createDockerBackend().start({ image: 'berth-test/busybox:latest', network: 'none', labels: { 'berth.test-guardian': workerData } });
  parentPort.close();
}
