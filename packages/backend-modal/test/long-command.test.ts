// A command line longer than Modal takes (the simulator enforces the same bound) still runs: berth
// routes it through a script written into the sandbox, with every byte of every argument kept.
// (Each argument must still fit Linux's own 128 KiB per-argument limit.)
import { afterAll, describe, expect, it } from 'vitest';
import { createModalBackend } from '@berth/backend-modal';
import { ModalSimulator } from '@berth/test-support/modal-sim';
import { ARG_LIMIT } from '@berth/test-support/modal-sim/router';

const sim = await ModalSimulator.start();
const backend = createModalBackend({ serverUrl: sim.url, ca: sim.ca, tokenId: sim.tokenId, tokenSecret: sim.tokenSecret, modalConfigEnv: {} });
afterAll(async () => {
  await backend.close();
  await sim.close();
});

describe('long command lines on Modal (simulated)', () => {
  it(`an argv over the ${ARG_LIMIT}-byte limit runs, quotes and all, and leaves no script behind`, async () => {
    await using env = await backend.start({ image: 'berth-test/busybox:latest' });
    const long = `it's "quoted" $HOME \`x\` ${'a'.repeat(ARG_LIMIT + 30_000)}`;
    const result = await env.exec(['sh', '-c', 'printf %s "$1" | md5sum; printf %s "$1" | wc -c', 'berth', long]);
    expect(result.exitCode, result.stderr.slice(0, 500)).toBe(0);
    const [sum, count] = result.stdout.trim().split('\n');
    const { createHash } = await import('node:crypto');
    expect(sum?.split(' ')[0]).toBe(createHash('md5').update(long).digest('hex'));
    expect(Number(count)).toBe(Buffer.byteLength(long));
    await expect(env.exec('ls -a /tmp | grep -c berth-cmd || true')).resolves.toMatchObject({ stdout: '0\n' });
    // A shell string that long goes the same way. (Linux itself takes at most 128 KiB per argument.)
    const words = ARG_LIMIT + 20_000;
    await expect(env.exec(`echo ${'b'.repeat(words)} | wc -c`)).resolves.toMatchObject({
      exitCode: 0,
      stdout: expect.stringMatching(new RegExp(`^\\s*${words + 1}\\s*$`)),
    });
  });
});
