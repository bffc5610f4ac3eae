// berth as one file: the CLI and every backend (packages/cli/dist/bundle-main.js and what it
// imports, npm dependencies included) bundled by esbuild into one ES module that Node >= 20.18
// runs with nothing else installed. harbor's plugin ships it inside its wheel
// (python/harbor-berth/src/berth_harbor/bin/berth.mjs, the default output); `node berth.mjs` is
// `berth`. Needs the build (`npm run build`) first: it bundles the compiled JavaScript.
import { mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const entry = resolve(repo, 'packages/cli/dist/bundle-main.js');
const out = resolve(process.argv[2] ?? resolve(repo, 'python/harbor-berth/src/berth_harbor/bin/berth.mjs'));

try {
  statSync(entry);
} catch {
  process.stderr.write(`bundle: ${entry} is missing: run \`npm run build\` first\n`);
  process.exit(2);
}
mkdirSync(dirname(out), { recursive: true });
const result = await build({
  entryPoints: [entry],
  outfile: out,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20.18',
  // CommonJS dependencies call require() for Node's modules and read __dirname; an ES module has
  // neither of its own.
  banner: {
    js: [
      '#!/usr/bin/env node',
      "import { createRequire as __berthCreateRequire } from 'node:module';",
      "import { fileURLToPath as __berthFileURLToPath } from 'node:url';",
      'const require = __berthCreateRequire(import.meta.url);',
      'const __filename = __berthFileURLToPath(import.meta.url);',
      "const __dirname = __filename.slice(0, __filename.lastIndexOf('/'));",
    ].join('\n'),
  },
  // ssh2's optional native parts (dockerode's ssh:// transport), loaded in try/catch: without them
  // ssh2 uses its JavaScript fallbacks.
  external: ['cpu-features', '*.node'],
  legalComments: 'eof',
  logLevel: 'warning',
  metafile: true,
});
const bytes = statSync(out).size;
const inputs = Object.keys(result.metafile.inputs).length;
process.stdout.write(`bundle: ${out} (${(bytes / 1024 / 1024).toFixed(1)} MiB, ${inputs} modules)\n`);
