// The v4 stdin framing, decoded by the very shell pipeline the sandbox runs (here, this machine's
// sh, sed and base64), for any chunking of the input.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { StdinFramer, framedStdinPrologue } from '../src/stdin-v4.js';

function decode(framed: string, argv = ['cat']): { stdout: Buffer; status: number | null } {
  const script = framedStdinPrologue('shift');
  const run = spawnSync('/bin/sh', ['-c', script, 'berth-exec', '--', ...argv], { input: framed, maxBuffer: 64 * 1024 * 1024 });
  return { stdout: run.stdout, status: run.status };
}

describe('StdinFramer', () => {
  it('round-trips any bytes, whatever the chunking, and an empty input', () => {
    const data = randomBytes(10_000);
    for (const size of [1, 7, 3072, 4096, 10_000]) {
      const framer = new StdinFramer();
      let framed = '';
      for (let at = 0; at < data.length; at += size) framed += framer.push(data.subarray(at, at + size));
      framed += framer.end();
      expect(framed.split('\n').every((line) => line.length <= 4096)).toBe(true);
      expect(decode(framed).stdout.equals(data), `chunks of ${size}`).toBe(true);
    }
    expect(decode(new StdinFramer().end()).stdout.length).toBe(0);
  });

  it('keeps the exit code of a command that reads only part of its input', () => {
    const framer = new StdinFramer();
    const framed = framer.push(randomBytes(200_000)) + framer.end();
    const run = decode(framed, ['sh', '-c', 'head -c 3 >/dev/null; exit 5']);
    expect(run.status).toBe(5);
  });
});
