// harbor's plugin as a wheel that carries berth: bundles berth (scripts/bundle.mjs) into
// python/harbor-berth/src/berth_harbor/bin/berth.mjs, then `python -m build --wheel` (no isolation:
// the build venv has the pinned setuptools, from requirements-build.lock.txt), and checks the
// wheel holds the bundle. Writes into dist-python/ (or the directory given) and prints the
// wheel's path. Python: $BERTH_BUILD_PYTHON, else the venv test/setup/harbor.sh makes, else python3.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const plugin = join(repo, 'python/harbor-berth');
const out = resolve(process.argv[2] ?? join(repo, 'dist-python'));
const venvPython = `${process.env.BERTH_TEST_STATE ?? '/var/lib/berth-test'}/build-venv/bin/python`;
const python = process.env.BERTH_BUILD_PYTHON ?? (existsSync(venvPython) ? venvPython : 'python3');

execFileSync(process.execPath, [join(repo, 'scripts/bundle.mjs')], { stdio: 'inherit' });
mkdirSync(out, { recursive: true });
for (const f of readdirSync(out)) if (f.startsWith('harbor_berth-') && f.endsWith('.whl')) rmSync(join(out, f));
try {
  execFileSync(python, ['-m', 'build', '--wheel', '--no-isolation', '--outdir', out, plugin], { stdio: ['ignore', 'ignore', 'inherit'] });
} finally {
  // setuptools' scratch, in the source tree.
  rmSync(join(plugin, 'build'), { recursive: true, force: true });
  rmSync(join(plugin, 'src/harbor_berth.egg-info'), { recursive: true, force: true });
}
const wheel = readdirSync(out).find((f) => f.startsWith('harbor_berth-') && f.endsWith('.whl'));
if (!wheel) throw new Error(`python -m build wrote no wheel into ${out}`);
const names = execFileSync(python, ['-c', 'import sys, zipfile; print("\\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))', join(out, wheel)], {
  encoding: 'utf8',
});
if (!names.split('\n').includes('berth_harbor/bin/berth.mjs')) throw new Error(`${wheel} lacks berth_harbor/bin/berth.mjs`);
process.stdout.write(`${join(out, wheel)}\n`);
