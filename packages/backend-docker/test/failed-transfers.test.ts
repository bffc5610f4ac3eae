// A transfer that fails must release what it opened: the process that ran it exits by itself
// (it stayed alive with the engine's connection open when a download's local target could not be
// created). Run in a child process, against the real engine, both transfer paths.
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const child = join(import.meta.dirname, './support/failed-transfer-child.mjs');

function runChild(transfers: string, scratch: string): Promise<{ code: number | null; stdout: string; exitedAlone: boolean }> {
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, [child, transfers, scratch], { stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    proc.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    // A process held open by a leaked handle never exits: give it far more than it needs.
    const hung = setTimeout(() => proc.kill('SIGKILL'), 30_000);
    proc.on('exit', (code, signal) => {
      clearTimeout(hung);
      resolve({ code, stdout, exitedAlone: signal === null });
    });
  });
}

describe.each(['native', 'exec'])('failed transfers (%s) leave nothing open', (transfers) => {
  it('the process exits by itself after local failures, each classified', async () => {
    const scratch = await mkdtemp(join(tmpdir(), 'berth-failed-transfer-'));
    try {
      const { code, stdout, exitedAlone } = await runChild(transfers, scratch);
      expect(exitedAlone, 'the child had to be killed: a failed transfer left a handle open').toBe(true);
      expect(code).toBe(0);
      expect(JSON.parse(stdout)).toEqual([
        'downloadDir under a file: TransferError/local_io',
        'downloadFile under a file: TransferError/local_io',
        'uploadDir of a missing dir: TransferError/local_io',
      ]);
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  }, 60_000);
});
