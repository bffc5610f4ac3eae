import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Containers (running or not) whose labels include all of `labels` ('key=value'), by the real engine. */
export async function containersLabelled(...labels: string[]): Promise<string[]> {
  const args = ['ps', '-aq', ...labels.flatMap((l) => ['--filter', `label=${l}`])];
  const { stdout } = await run('docker', args);
  return stdout.split('\n').filter(Boolean);
}
