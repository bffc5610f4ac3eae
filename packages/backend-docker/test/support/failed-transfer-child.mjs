// Failed transfers in a process of their own, which must then exit by itself: a transfer that
// fails has to release every connection and file it opened.
//   node test/support/failed-transfer-child.mjs <native|exec> <scratch dir>
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createDockerBackend } from '@berth/backend-docker';

const [transfers, scratch] = process.argv.slice(2);
const file = join(scratch, 'afile');
writeFileSync(file, 'x');
const env = await createDockerBackend({ transfers }).start({ image: 'berth-test/busybox:latest', network: 'none' });
const outcomes = [];
const attempt = async (what, transfer) => {
  try {
    await transfer();
    outcomes.push(`${what}: succeeded`);
  } catch (error) {
    outcomes.push(`${what}: ${error.type}/${error.reason ?? error.path ?? ''}`);
  }
};
await env.exec('mkdir -p /tmp/tree && head -c 3000000 /dev/zero > /tmp/tree/big && echo x > /tmp/tree/small');
await attempt('downloadDir under a file', () => env.downloadDir('/tmp/tree', join(file, 'sub')));
await attempt('downloadFile under a file', () => env.downloadFile('/tmp/tree/big', join(file, 'sub', 'big')));
await attempt('uploadDir of a missing dir', () => env.uploadDir(join(scratch, 'missing'), '/tmp/up'));
await env.teardown();
console.log(JSON.stringify(outcomes));
