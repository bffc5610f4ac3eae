// Helpers shared by the harbor tests: harbor-layout task directories written into temp dirs.
import { chmod, mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseToml } from 'smol-toml';

export const BASIC_IMAGE = 'berth-test/busybox:latest';

export async function tempDir(prefix: string): Promise<string> {
  return mkdtemp(join(tmpdir(), `berth-harbor-${prefix}-`));
}

export interface TaskFiles {
  /** task.toml text; default: the basic image with small resources. */
  toml?: string;
  /** tests/test.sh; null for none. */
  test?: string | null;
  /** solution/solve.sh; null for none. */
  solve?: string | null;
  instruction?: string;
}

export function taskToml(image = BASIC_IMAGE, extra = ''): string {
  return `version = "1.0"

[agent]
timeout_sec = 60.0

[verifier]
timeout_sec = 60.0

[environment]
docker_image = "${image}"
cpus = 1
memory_mb = 256
# Harbor's default is public; the tests send nothing anywhere.
network_mode = "no-network"
${extra}`;
}

/** The oracle writes /app/done; the verifier scores 1 when it is there. */
export const SOLVE_SH = '#!/bin/sh\nset -eu\nmkdir -p /app\necho solved > /app/done\n';
export const TEST_SH = `#!/bin/sh
mkdir -p /logs/verifier
if [ "$(cat /app/done 2>/dev/null)" = solved ]; then
  echo "PASS"; echo 1 > /logs/verifier/reward.txt
else
  echo "FAIL: /app/done missing" >&2; echo 0 > /logs/verifier/reward.txt
fi
`;

export async function writeTask(root: string, id: string, files: TaskFiles = {}): Promise<string> {
  const dir = join(root, id);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'task.toml'), files.toml ?? taskToml());
  const test = files.test === undefined ? TEST_SH : files.test;
  if (test !== null) {
    await mkdir(join(dir, 'tests'), { recursive: true });
    await writeFile(join(dir, 'tests', 'test.sh'), test);
    await chmod(join(dir, 'tests', 'test.sh'), 0o755);
  }
  const solve = files.solve === undefined ? SOLVE_SH : files.solve;
  if (solve !== null) {
    await mkdir(join(dir, 'solution'), { recursive: true });
    await writeFile(join(dir, 'solution', 'solve.sh'), solve);
    await chmod(join(dir, 'solution', 'solve.sh'), 0o755);
  }
  if (files.instruction !== undefined) await writeFile(join(dir, 'instruction.md'), files.instruction);
  return dir;
}

/**
 * The instruction harbor requires of each step of a multi-step task, for a corpus copy that keeps
 * task.toml only (steps/<name>/instruction.md; the task's tests/test.sh verifies every step).
 */
export async function addStepInstructions(dir: string): Promise<void> {
  const steps = (parseToml(await readFile(join(dir, 'task.toml'), 'utf8')) as { steps?: Array<{ name: string }> }).steps ?? [];
  for (const step of steps) {
    await mkdir(join(dir, 'steps', step.name), { recursive: true });
    await writeFile(join(dir, 'steps', step.name, 'instruction.md'), `Do ${step.name}.\n`);
  }
}

/**
 * task.toml of a task that starts on no-network, whose agent runs under `agentNetwork` (its
 * task.toml lines) and whose verifier runs public: harbor's per-phase network semantics.
 */
export function phasesToml(agentNetwork: string): string {
  return `version = "1.0"
[agent]
timeout_sec = 60.0
${agentNetwork}
[verifier]
timeout_sec = 60.0
network_mode = "public"
[environment]
docker_image = "${BASIC_IMAGE}"
network_mode = "no-network"
`;
}

/**
 * A task whose agent runs offline and whose verifier runs online: each phase sends `<prefix>-agent`
 * or `<prefix>-verifier` from inside to `listener`, and the verifier writes what both saw to
 * verifier/saw.txt ('agent=blocked|reached', then 'verifier=...'), scoring 1 either way.
 */
export async function writeNetworkPhasesTask(root: string, listener: { host: string; port: number }, prefix: string): Promise<string> {
  const send = (phase: string) =>
    `if printf %s ${prefix}-${phase} | nc -w 3 ${listener.host} ${listener.port} >/dev/null 2>&1; then echo ${phase}=reached; else echo ${phase}=blocked; fi`;
  return writeTask(root, 'phases', {
    toml: phasesToml('network_mode = "no-network"'),
    solve: `#!/bin/sh\nmkdir -p /app\n${send('agent')} > /app/agent.txt\n`,
    test: `#!/bin/sh\nmkdir -p /logs/verifier\n{ cat /app/agent.txt; ${send('verifier')}; } > /logs/verifier/saw.txt\necho 1 > /logs/verifier/reward.txt\n`,
  });
}

/**
 * A task whose agent runs under an allowlist of `allowed`'s address and whose verifier runs public
 * (the sandbox starts on no-network): the agent's phase tries both listeners, the verifier's
 * `denied`'s, and the verifier writes what each saw to /logs/verifier/saw.txt.
 */
export async function writeAllowlistPhasesTask(
  root: string,
  allowed: { host: string; port: number },
  denied: { host: string; port: number },
  prefix: string,
): Promise<string> {
  const send = (phase: string, name: string, to: { host: string; port: number }) =>
    `if printf %s ${prefix}-${phase}-${name} | nc -w 3 ${to.host} ${to.port} >/dev/null 2>&1; then echo ${phase}-${name}=reached; else echo ${phase}-${name}=blocked; fi`;
  return writeTask(root, 'allowlist-phases', {
    toml: phasesToml(`network_mode = "allowlist"\nallowed_hosts = ["${allowed.host}"]`),
    solve: `#!/bin/sh
mkdir -p /app
{ ${send('agent', 'allowed', allowed)}; ${send('agent', 'denied', denied)}; } > /app/agent.txt
`,
    test: `#!/bin/sh
mkdir -p /logs/verifier
{ cat /app/agent.txt; ${send('verifier', 'denied', denied)}; } > /logs/verifier/saw.txt
echo 1 > /logs/verifier/reward.txt
`,
  });
}

export { removeBuiltImages } from '@berth/test-support/built-images';
