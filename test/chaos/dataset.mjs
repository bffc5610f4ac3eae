// The chaos run's tasks and their truth. Written here, independently of berth: what each task's
// reward must be if the infrastructure's failures are all absorbed.
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export const LOCAL_IMAGE = 'berth-test/busybox:latest';
export const PRIVATE_REPO = '127.0.0.1:5000/berth/private-busybox';
export const PRIVATE_TAGS = ['chaos-0', 'chaos-1', 'chaos-2', 'chaos-3', 'chaos-4'];

/** Task i: every 4th fails its verifier (reward 0), the rest pass; every 3rd uses a private image. */
export function truthOf(i) {
  return {
    id: `chaos-${String(i).padStart(3, '0')}`,
    reward: i % 4 === 0 ? 0 : 1,
    image: i % 3 === 0 ? `${PRIVATE_REPO}:${PRIVATE_TAGS[i % PRIVATE_TAGS.length]}` : LOCAL_IMAGE,
    // 0.5 to 3 s of "agent work", so attempts are in flight when the faults hit.
    sleepSec: (0.5 + ((i * 7) % 26) / 10).toFixed(1),
  };
}

async function script(path, body) {
  await writeFile(path, `#!/bin/sh\n${body}\n`);
  await chmod(path, 0o755);
}

export async function writeChaosDataset(root, count) {
  const truth = [];
  for (let i = 0; i < count; i++) {
    const t = truthOf(i);
    truth.push(t);
    const dir = join(root, t.id);
    await mkdir(join(dir, 'solution'), { recursive: true });
    await mkdir(join(dir, 'tests'), { recursive: true });
    await writeFile(
      join(dir, 'task.toml'),
      `version = "1.0"\n[verifier]\ntimeout_sec = 60.0\n[agent]\ntimeout_sec = 120.0\n[environment]\ndocker_image = "${t.image}"\nnetwork_mode = "no-network"\n`,
    );
    await writeFile(join(dir, 'instruction.md'), 'Write 42 to /app/answer.txt.\n');
    await script(join(dir, 'solution', 'solve.sh'), `sleep ${t.sleepSec}\nmkdir -p /app && echo 42 > /app/answer.txt`);
    const verdict = t.reward === 1 ? '[ "$(cat /app/answer.txt)" = 42 ] && echo 1 || echo 0' : 'echo 0';
    await script(join(dir, 'tests', 'test.sh'), `mkdir -p /logs/verifier\n(${verdict}) > /logs/verifier/reward.txt`);
  }
  return truth;
}
