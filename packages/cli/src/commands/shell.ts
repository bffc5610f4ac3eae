import { resolve } from 'node:path';
import { BerthError, CapabilityError, ConfigError, describeImage, type Environment, type ExecOptions } from '@berth/core';
import { loadHarborTasks, startTaskSandbox, type HarborTask } from '@berth/harbor';
import type { Command } from 'commander';
import { addBackendOptions, loadBackend, type BackendFlags } from '../backends.js';
import { ExitStatusError, UsageError } from '../usage-error.js';

interface SandboxOptions extends BackendFlags {
  json?: boolean;
  tty?: boolean;
}

async function loadOneTask(taskDir: string): Promise<HarborTask> {
  const tasks = await loadHarborTasks(resolve(taskDir));
  if (tasks.length !== 1)
    throw new UsageError(
      `${taskDir} holds ${tasks.length} tasks; give one task directory (the one with task.toml), e.g. ${taskDir}/${tasks[0]?.id ?? '<task>'}`,
    );
  return tasks[0]!;
}

/**
 * Start the task's sandbox as a trial would (tests in /tests, solution in /solution), run `work`
 * in it, and remove it whatever happens: at the end, on an error, or on SIGTERM/SIGHUP.
 */
async function withTaskSandbox(
  taskDir: string,
  opts: SandboxOptions,
  needsTty: boolean,
  work: (env: Environment, task: HarborTask, signal: AbortSignal) => Promise<number>,
): Promise<number> {
  const task = await loadOneTask(taskDir);
  const backend = await loadBackend(opts);
  if (needsTty && !backend.capabilities.tty)
    throw new UsageError(
      `the ${backend.name} backend cannot give a command a terminal (tty); use --backend docker for an interactive shell, or \`berth exec\``,
    );
  const controller = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => controller.abort(new Error(`stopped by ${signal}`));
  for (const s of ['SIGTERM', 'SIGHUP', 'SIGINT'] as const) process.on(s, onSignal);
  // Where it runs, namespace and all (a defaulted namespace is never silent).
  process.stderr.write(`berth: starting ${task.id} on ${backend.name} (${backend.target})…\n`);
  try {
    const env = await startTaskSandbox(backend, task, { signal: controller.signal }).catch(infrastructure);
    try {
      process.stderr.write(
        `berth: sandbox ${env.id} (${describeImage(env.spec.image)}), tests in /tests${task.solutionDir ? ', solution in /solution' : ''}; it is removed when this ends\n`,
      );
      return await work(env, task, controller.signal).catch(infrastructure);
    } finally {
      await env.teardown();
    }
  } finally {
    for (const s of ['SIGTERM', 'SIGHUP', 'SIGINT'] as const) process.off(s, onSignal);
  }
}

/** Exit status of `berth exec` and `berth shell` when the infrastructure failed: never the command's own. */
export const INFRASTRUCTURE_EXIT = 125;

/** An infrastructure failure ends the command with 125; the caller's mistakes and a stop keep theirs (2, 130). */
function infrastructure(error: unknown): never {
  if (
    BerthError.isInstance(error) &&
    (error.category === 'transient_infra' || error.category === 'permanent_infra') &&
    !ConfigError.isInstance(error) &&
    !CapabilityError.isInstance(error)
  ) {
    throw new ExitStatusError(error, INFRASTRUCTURE_EXIT);
  }
  throw error;
}

/**
 * The terminal's size for the sandbox's pty. Some terminals report 0x0 (under `script`, in CI, in
 * some IDEs): a size of 0 is no size, so the usual 24x80 is used, as for none.
 */
export function terminalSize(out: { rows?: number; columns?: number }): { rows: number; cols: number } {
  return { rows: out.rows || 24, cols: out.columns || 80 };
}

function taskExecOptions(task: HarborTask, signal: AbortSignal): ExecOptions {
  return { ...(task.workdir ? { cwd: task.workdir } : {}), ...(task.users.agent !== undefined ? { user: task.users.agent } : {}), signal };
}

/**
 * Input piped into `berth shell` (a script, not a person): a terminal has no end of input, and a
 * ^D typed ahead is lost when the shell's line editor takes the terminal over, so when the pipe
 * ends, `exit` is typed for it (with the status of the last command, as at the end of a script).
 */
async function* typedThenExit(input: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
  for await (const chunk of input) yield chunk;
  yield Buffer.from('\nexit\n');
}

export async function shellCommand(taskDir: string, opts: SandboxOptions): Promise<number> {
  return withTaskSandbox(taskDir, opts, true, async (env, task, signal) => {
    const raw = process.stdin.isTTY === true;
    const stdin = raw ? process.stdin : typedThenExit(process.stdin);
    // Keys go to the sandbox as typed (Ctrl-C included: it interrupts the remote command, not berth).
    if (raw) process.stdin.setRawMode(true);
    try {
      const result = await env.exec(['/bin/sh', '-c', 'if command -v bash >/dev/null 2>&1; then exec bash -i; else exec sh -i; fi'], {
        ...taskExecOptions(task, signal),
        tty: terminalSize(process.stdout),
        env: { TERM: process.env.TERM ?? 'xterm' },
        stdin,
        onStdout: (chunk) => process.stdout.write(chunk),
      });
      return result.exitCode;
    } finally {
      if (raw) process.stdin.setRawMode(false);
    }
  });
}

export async function execCommand(taskDir: string, command: string[], opts: SandboxOptions): Promise<number> {
  if (command.length === 0) throw new UsageError('berth exec needs a command after --, e.g. berth exec ./task -- ls /tests');
  // One argument is a shell line (pipes, globs); several are an exact argv.
  const argv = command.length === 1 ? ['/bin/sh', '-c', command[0]!] : command;
  const piped = process.stdin.isTTY !== true;
  if (opts.tty && piped) {
    throw new UsageError(
      '--tty with piped input: a terminal has no end of input, so the command would wait for more once the pipe ends; drop --tty and the command reads the pipe to its end',
    );
  }
  return withTaskSandbox(taskDir, opts, opts.tty === true, async (env, task, signal) => {
    const result = await env.exec(argv, {
      ...taskExecOptions(task, signal),
      // Piped input is the command's stdin, to its end; a terminal's is only with --tty.
      ...(opts.tty ? { tty: terminalSize(process.stdout), stdin: process.stdin } : piped ? { stdin: process.stdin } : {}),
      ...(opts.json ? {} : { onStdout: (c: Uint8Array) => process.stdout.write(c), onStderr: (c: Uint8Array) => process.stderr.write(c) }),
    });
    if (opts.json) {
      const { stdoutBytes: _o, stderrBytes: _e, ...data } = result;
      process.stdout.write(`${JSON.stringify(data, null, 2)}\n`);
    }
    return result.timedOut ? 124 : result.exitCode;
  });
}

export function registerShell(program: Command): void {
  const command = program
    .command('shell')
    .description("Open an interactive shell in a task's sandbox (tests in /tests, solution in /solution); the sandbox is removed when the shell exits")
    .argument('<task-dir>', 'one task directory (with task.toml)');
  addBackendOptions(command)
    .addHelpText(
      'after',
      `\nExample:\n  berth shell examples/tasks/hello-world\n  (then: sh /solution/solve.sh && sh /tests/test.sh; cat /logs/verifier/reward.txt)`,
    )
    .action(async (taskDir: string, opts: SandboxOptions) => {
      process.exitCode = await shellCommand(taskDir, opts);
    });
}

export function registerExec(program: Command): void {
  const command = program
    .command('exec')
    .description("Run one command in a task's sandbox and exit with its exit status; the sandbox is removed afterwards")
    .argument('<task-dir>', 'one task directory (with task.toml)')
    .argument('[command...]', 'after --: one argument runs as a shell line, several as an exact argv');
  addBackendOptions(command)
    .option('--tty', 'give the command a terminal (your stdin is its input)')
    .option('--json', 'print the result (exit code, stdout, stderr, duration) as JSON instead of streaming the output')
    .addHelpText(
      'after',
      `\nInput piped into berth exec is the command's stdin. Exit status: the command's own (124 if it timed out); 2 on a usage error; 125 when the infrastructure failed (the sandbox could not start, was lost...).\n\nExamples:\n  berth exec examples/tasks/hello-world -- sh /solution/solve.sh\n  berth exec examples/tasks/hello-world -- 'ls -la /tests | wc -l'`,
    )
    .action(async (taskDir: string, command: string[], opts: SandboxOptions) => {
      process.exitCode = await execCommand(taskDir, command, opts);
    });
}
