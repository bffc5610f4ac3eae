import { chmod, mkdir, readdir, writeFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import type { Command } from 'commander';
import { UsageError } from '../usage-error.js';

interface InitOptions {
  image: string;
}

/** The skeleton: harbor's layout, every file runnable as is, comments saying what to change. */
function files(id: string, image: string): Record<string, string> {
  return {
    'task.toml': `version = "1.0"

[metadata]
# Free-form; harbor and berth keep it, nothing reads it.
difficulty = "easy"

[agent]
# The agent (or the oracle, solution/solve.sh) is stopped after this long.
timeout_sec = 600.0

[verifier]
timeout_sec = 120.0

[environment]
# The image the sandbox starts from. Or delete this line and write environment/Dockerfile.
docker_image = "${image}"
# The agent's and the verifier's working directory.
workdir = "/app"
cpus = 1
memory_mb = 1024
# Harbor's default network is public; "no-network" cuts the sandbox off (on Kubernetes, the cluster
# must enforce NetworkPolicy: berth proves it does before the task runs, and refuses it if not).
# network_mode = "no-network"
`,
    'instruction.md': `Write the text \`hello from ${id}\` into \`/app/hello.txt\`.\n`,
    'solution/solve.sh': `#!/bin/sh
# What a perfect agent would do: \`berth run <dir>\` (the oracle agent) runs this, then the tests.
set -eu
mkdir -p /app
echo "hello from ${id}" > /app/hello.txt
`,
    'tests/test.sh': `#!/bin/sh
# The verifier: write the score (1 solved, 0 not) to /logs/verifier/reward.txt, or JSON to
# /logs/verifier/reward.json such as {"reward": 0.75, "passed": 3}: the score is "reward" (or the
# only field); other numbers are kept beside it. Several fields and no "reward" score nothing: berth
# stops such a task as defined wrongly (TaskDefinitionError). Neither file: a task failure, scored 0.
mkdir -p /logs/verifier
if [ "$(cat /app/hello.txt 2>/dev/null)" = "hello from ${id}" ]; then
  echo "PASS"; echo 1 > /logs/verifier/reward.txt
else
  echo "FAIL: /app/hello.txt does not say hello"; echo 0 > /logs/verifier/reward.txt
fi
`,
  };
}

/** A path as a shell takes it: as is when it is plain, else in single quotes. */
function shellQuote(path: string): string {
  return /^[\w./@%+=:,-]+$/.test(path) ? path : `'${path.replaceAll("'", "'\\''")}'`;
}

export async function initCommand(dir: string, opts: InitOptions): Promise<number> {
  const root = resolve(dir);
  const existing = await readdir(root).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return [];
    throw new UsageError(`cannot use ${root}: ${error.message}`);
  });
  if (existing.length > 0) throw new UsageError(`${root} is not empty: give a new directory (berth init never overwrites files)`);
  const id = basename(root);
  const shown = shellQuote(dir);
  for (const [name, text] of Object.entries(files(id, opts.image))) {
    const path = join(root, name);
    await mkdir(join(path, '..'), { recursive: true });
    await writeFile(path, text);
    if (name.endsWith('.sh')) await chmod(path, 0o755);
  }
  process.stdout.write(
    [
      `created the task ${id} in ${root}:`,
      '  task.toml           the image, resources, timeouts, network',
      '  instruction.md      what the agent is asked to do',
      '  solution/solve.sh   what a perfect agent would do (the oracle)',
      '  tests/test.sh       the verifier: writes /logs/verifier/reward.txt',
      'next:',
      `  berth run ${shown}                 the oracle should score 1`,
      `  berth run ${shown} --agent none    and doing nothing should score 0`,
      `  berth shell ${shown}               look around inside the sandbox`,
      '',
    ].join('\n'),
  );
  return 0;
}

export function registerInit(program: Command): void {
  program
    .command('init')
    .description('Write a new harbor-layout task (task.toml, instruction, solution, tests) that runs as it is, to start from')
    .argument('<dir>', 'a new (or empty) directory; its name is the task id')
    .option('--image <ref>', 'the image the task starts from', 'ubuntu:24.04')
    .addHelpText('after', `\nExample:\n  berth init tasks/my-first-task && berth run tasks/my-first-task`)
    .action(async (dir: string, opts: InitOptions) => {
      process.exitCode = await initCommand(dir, opts);
    });
}
