// sdk/sdk-descriptors.json is the pinned SDK's own schema: dump-descriptors.py, run with the SDK
// that test/setup/setup.sh installs from sdk/requirements-sdk.lock.txt, writes exactly the committed
// file. After a change of the lock file (or of the names fields.json lists) the snapshot must be
// made again: `$VENV/bin/python packages/backend-modal/test/sdk/dump-descriptors.py`.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const VENV = process.env.BERTH_MODAL_SDK_VENV ?? join(process.env.BERTH_TEST_STATE ?? '/var/lib/berth-test', 'modal-sdk-venv');
const SCRIPT = new URL('./sdk/dump-descriptors.py', import.meta.url).pathname;

describe("the SDK's descriptors snapshot", () => {
  it('is what the pinned SDK dumps', async () => {
    const python = join(VENV, 'bin', 'python');
    if (!existsSync(python)) throw new Error(`no Modal SDK venv at ${VENV}: run test/setup/setup.sh`);
    const r = await promisify(execFile)(python, [SCRIPT, '--check']).then(
      (out) => ({ code: 0, stderr: out.stderr }),
      (error: { code?: number; stderr?: string }) => ({ code: error.code ?? -1, stderr: error.stderr ?? String(error) }),
    );
    expect(r).toStrictEqual({ code: 0, stderr: 'sdk-descriptors.json is up to date\n' });
  });
});
