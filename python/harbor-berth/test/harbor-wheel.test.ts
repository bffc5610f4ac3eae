// The plugin installs as a wheel too, carrying the data files it reads at run time.
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const PLUGIN = fileURLToPath(new URL('..', import.meta.url));
const VENV = process.env.BERTH_HARBOR_VENV ?? '/var/lib/berth-test/harbor-venv';

describe('harbor-berth as a wheel', () => {
  it('builds, with capabilities.json and remedies.json inside', async () => {
    const out = await mkdtemp(join(tmpdir(), 'berth-wheel-'));
    try {
      await promisify(execFile)(join(VENV, 'bin/pip'), ['wheel', '--no-deps', '--quiet', '--no-build-isolation', PLUGIN, '-w', out], { cwd: out });
      const [wheel] = await readdir(out);
      expect(wheel).toMatch(/^harbor_berth-0\.1\.0-py3-none-any\.whl$/);
      const { stdout } = await promisify(execFile)(join(VENV, 'bin/python'), [
        '-c',
        `import zipfile; print("\\n".join(zipfile.ZipFile(${JSON.stringify(join(out, wheel!))}).namelist()))`,
      ]);
      expect(stdout.split('\n')).toEqual(
        expect.arrayContaining(['berth_harbor/capabilities.json', 'berth_harbor/remedies.json', 'berth_harbor/environment.py']),
      );
    } finally {
      await rm(out, { recursive: true, force: true });
      await rm(join(PLUGIN, 'build'), { recursive: true, force: true });
    }
  }, 120_000);
});
