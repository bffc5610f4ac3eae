import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** Local images made by test/setup/setup.sh: the public one, and one only the registry's credentials can pull. */
export const LOCAL_IMAGE = 'berth-test/busybox:latest';
export const PRIVATE_IMAGE = '127.0.0.1:5000/berth/private-busybox:cli';
/** The same image under other tags: different references, one problem (census groups them). */
export const PRIVATE_TAGS = ['cli', 'cli-2', 'cli-3'];

/**
 * What a generated task does:
 * - pass: the oracle solves it (reward 1);
 * - fail: the verifier runs and writes 0;
 * - no-reward: the verifier writes nothing (a task failure, RewardFileMissing);
 * - fake-zero: the verifier's output says PASS but it writes 0 (what regrade must catch);
 * - private: its image is in the private registry and the run has no credentials (permanent infra);
 * - slow: the oracle sleeps `sleepSec` first.
 */
export type TaskKind = 'pass' | 'fail' | 'no-reward' | 'fake-zero' | 'private' | 'slow';

export interface TaskDef {
  id: string;
  kind: TaskKind;
  sleepSec?: number;
  /** Another image than the kind's. */
  image?: string;
  /** harbor's network_mode; default "no-network" (the tests send nothing anywhere). */
  network?: 'public' | 'no-network';
}

const VERIFIER: Record<TaskKind, string> = {
  pass: 'if [ "$(cat /app/answer.txt 2>/dev/null)" = 42 ]; then echo "PASSED 1 test"; echo 1 > /logs/verifier/reward.txt; else echo "FAILED 1 test"; echo 0 > /logs/verifier/reward.txt; fi',
  slow: 'if [ "$(cat /app/answer.txt 2>/dev/null)" = 42 ]; then echo "PASSED 1 test"; echo 1 > /logs/verifier/reward.txt; else echo "FAILED 1 test"; echo 0 > /logs/verifier/reward.txt; fi',
  private: 'echo "PASSED 1 test"; echo 1 > /logs/verifier/reward.txt',
  fail: 'echo "FAILED 1 test"; echo 0 > /logs/verifier/reward.txt',
  'no-reward': 'echo "the verifier crashed before grading" >&2; exit 3',
  'fake-zero': 'echo "PASSED 1 test"; echo 0 > /logs/verifier/reward.txt',
};

async function writeScript(path: string, body: string): Promise<void> {
  await writeFile(path, `#!/bin/sh\n${body}\n`);
  await chmod(path, 0o755);
}

/** A harbor-layout dataset in `root`, one directory per task. */
export async function writeDataset(root: string, tasks: readonly TaskDef[]): Promise<string> {
  for (const task of tasks) {
    const dir = join(root, task.id);
    await mkdir(join(dir, 'solution'), { recursive: true });
    await mkdir(join(dir, 'tests'), { recursive: true });
    const image = task.image ?? (task.kind === 'private' ? PRIVATE_IMAGE : LOCAL_IMAGE);
    await writeFile(
      join(dir, 'task.toml'),
      [
        'version = "1.0"',
        '[verifier]',
        'timeout_sec = 60.0',
        '[agent]',
        'timeout_sec = 120.0',
        '[environment]',
        `docker_image = "${image}"`,
        `network_mode = "${task.network ?? 'no-network'}"`,
        '',
      ].join('\n'),
    );
    await writeFile(join(dir, 'instruction.md'), `Write 42 to /app/answer.txt (${task.kind}).\n`);
    const sleep = task.kind === 'slow' ? `sleep ${task.sleepSec ?? 5}\n` : '';
    await writeScript(join(dir, 'solution', 'solve.sh'), `${sleep}mkdir -p /app && echo 42 > /app/answer.txt`);
    await writeScript(join(dir, 'tests', 'test.sh'), `mkdir -p /logs/verifier\n${VERIFIER[task.kind]}`);
  }
  return root;
}
