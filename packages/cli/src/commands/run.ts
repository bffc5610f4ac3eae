import { basename, resolve } from 'node:path';
import { MAX_POOL_SIZE, RunMismatchError, createEvents, type Backend, type RunEvents } from '@berth/core';
import { runHarborJob, setJobAside } from '@berth/harbor';
import { agentFromOption } from '../agent-command.js';
import { addBackendOptions, loadBackend, type BackendFlags } from '../backends.js';
import { hintInCliWords } from '../cli-words.js';
import { parseDuration } from '../duration.js';
import { collect, positiveInt } from '../options.js';
import { attachDisplay, createDisplay } from '../run/run-display.js';
import { runSummaryLines, sandboxesLeftLines } from '../run/run-summary.js';
import { loadSelected } from '../task-filter.js';
import { printNotes } from '../task-notes.js';
import { UsageError } from '../usage-error.js';
import type { Command } from 'commander';

export interface RunOptions extends BackendFlags {
  agent: string;
  attempts: string;
  concurrency: string;
  deadline?: string;
  jobDir?: string;
  filter?: string[];
  fresh?: boolean;
  json?: boolean;
  pool?: string;
  snapshotSetup?: string;
}

/** What a resumed job's journal calls a setting, as the flag a user changes. */
const FLAG_OF: Record<string, string> = {
  tasks: 'the tasks (<tasks> or --filter)',
  maxAttempts: '--attempts',
  agent: '--agent (commands are compared by a hash of their text)',
  backend: '--backend',
  target: 'where the backend runs (its cluster, namespace, engine or Modal environment)',
  'journal version': 'the berth version that wrote the job',
};

/** A resume refused, in the CLI's words: what differs, by flag, and the two ways on. */
function mismatchUsage(jobDir: string, error: RunMismatchError): UsageError {
  const lines = error.changes.map((change) => {
    const key = Object.keys(FLAG_OF).find((k) => change.startsWith(`${k} (`));
    return `  - ${key ? `${FLAG_OF[key]}: ${change.slice(key.length + 1)}` : change}`;
  });
  return new UsageError(
    `${jobDir} holds another run, which this command would mix with its own:\n${lines.join('\n')}\n` +
      `Run the same command with --fresh to start over (the old job is moved aside, not deleted), or give --job-dir <another dir>.`,
  );
}

/** How long a `--pool` pool keeps sandboxes no trial claims (a job that moved on to other tasks): a minute. */
const POOL_IDLE_MS = 60_000;

/** --pool n: how many started sandboxes to keep ready per distinct task environment. */
function poolSize(value: string): number {
  const n = positiveInt(value, '--pool');
  if (n > MAX_POOL_SIZE) throw new UsageError(`--pool is at most ${MAX_POOL_SIZE} sandboxes per task environment; got ${n}`);
  return n;
}

/** --snapshot-setup on a backend that cannot snapshot, or with nothing to run: said with the flag, before any task. */
function refuseSnapshotSetup(backend: Backend, command: string): void {
  if (command.trim() === '') throw new UsageError('--snapshot-setup: give the shell command that sets a task up, e.g. --snapshot-setup "pip install my-agent"');
  if (backend.capabilities.snapshot) return;
  const hint = backend.hints?.snapshot;
  throw new UsageError(
    `--snapshot-setup needs a backend that can snapshot a sandbox; --backend ${backend.name} cannot${hint ? ` (${hintInCliWords(hint)})` : ''}. Run without --snapshot-setup, or with --backend docker or modal`,
  );
}

/** Where a run's files go unless --job-dir says: ./berth-jobs/<tasks dir name>, so the same command resumes. */
export function defaultJobDir(tasksPath: string): string {
  return resolve('berth-jobs', basename(resolve(tasksPath)));
}

/**
 * Ctrl-C (or SIGTERM) once: stop gracefully (no new attempts, running ones aborted and their
 * sandboxes removed, the report written). Twice: exit at once (`berth sweep` removes what is left).
 */
function stopOnSignals(controller: AbortController, notice: (text: string) => void): () => void {
  let count = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    count++;
    if (count === 1) {
      notice(`${signal}: stopping — no new attempts; running ones are being stopped and their sandboxes removed (press Ctrl-C again to exit at once)`);
      controller.abort(new Error(`stopped by ${signal}`));
      return;
    }
    process.stderr.write(`\n${signal} again: exiting now; \`berth sweep\` removes any sandbox left behind, and running the same command resumes\n`);
    process.exit(130);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
}

/**
 * What this process made and could not remove (a teardown while the engine was down for longer
 * than teardown retries): one process runs one job, so everything it still owns can go now.
 * Returns what to tell the user, printed after the report's own account of the sandboxes.
 */
async function removeLeftovers(backend: Backend): Promise<string[]> {
  const lines: string[] = [];
  try {
    const swept = await backend.sweep({ ownedByThisProcess: true });
    if (swept.removed.length > 0) lines.push(`removed ${swept.removed.length} sandbox(es) of this run whose teardown had failed`);
    for (const f of swept.failed) lines.push(`could not remove ${f.id}: ${f.message} (run \`berth sweep\` later)`);
  } catch (error) {
    lines.push(`could not check for sandboxes left behind: ${(error as Error).message} (run \`berth sweep\` later)`);
  }
  return lines;
}

export async function runCommand(tasksPath: string, opts: RunOptions): Promise<number> {
  const maxAttempts = positiveInt(opts.attempts, '--attempts');
  const concurrency = positiveInt(opts.concurrency, '--concurrency');
  const deadlineMs = opts.deadline === undefined ? undefined : parseDuration(opts.deadline, '--deadline');
  const pool = opts.pool === undefined ? undefined : poolSize(opts.pool);
  const agent = agentFromOption(opts.agent);
  const tasksDir = resolve(tasksPath);
  const tasks = await loadSelected(tasksDir, opts.filter ?? []);
  const backend = await loadBackend(opts);
  if (opts.snapshotSetup !== undefined) refuseSnapshotSetup(backend, opts.snapshotSetup);
  const jobDir = opts.jobDir ? resolve(opts.jobDir) : defaultJobDir(tasksPath);
  // One pool per task (its sandboxes carry its label): never more than the attempts it may take.
  const poolNeeded = pool === undefined ? undefined : Math.min(pool, maxAttempts);

  // With --json, stdout carries only the report; what happens meanwhile goes to stderr.
  const display = createDisplay(opts.json ? process.stderr : process.stdout, tasks.length);
  const say = (text: string) => (opts.json ? process.stderr : process.stdout).write(`${text}\n`);
  say(`berth run: ${tasks.length} task(s) from ${tasksDir} on ${backend.name} (${backend.target}), agent ${opts.agent}, job ${jobDir}`);
  printNotes(tasks, say);
  if (pool !== undefined && poolNeeded! < pool) {
    say(`--pool ${pool}: a task takes at most ${poolNeeded} attempt(s) (--attempts) and has a pool of its own, so each pool keeps ${poolNeeded}`);
  }
  if (opts.fresh) {
    const aside = await setJobAside(jobDir);
    if (aside) say(`--fresh: the previous job is now ${aside}`);
  }
  const events = createEvents<RunEvents>();
  attachDisplay(events, display);
  const controller = new AbortController();
  const release = stopOnSignals(controller, (text) => display.notice(text));
  let result;
  try {
    result = await runHarborJob({
      tasks,
      tasksDir,
      backend,
      jobDir,
      agent,
      maxAttempts,
      concurrency,
      ...(deadlineMs ? { deadlineMs } : {}),
      ...(poolNeeded ? { pool: { size: poolNeeded, maxIdleMs: POOL_IDLE_MS } } : {}),
      ...(opts.snapshotSetup !== undefined ? { snapshotSetup: { command: opts.snapshotSetup } } : {}),
      signal: controller.signal,
      events,
    });
  } catch (error) {
    if (RunMismatchError.isInstance(error) && error instanceof RunMismatchError) throw mismatchUsage(jobDir, error);
    throw error;
  } finally {
    release();
    display.stop();
  }
  const swept = await removeLeftovers(backend);
  const { report } = result;
  if (opts.json) {
    // stdout is the report's; what was left behind still goes to the person, on stderr.
    for (const line of [...sandboxesLeftLines(result), ...swept]) say(line);
    process.stdout.write(`${JSON.stringify({ jobDir, report, resume: result.resume ?? null }, null, 2)}\n`);
  } else {
    for (const line of runSummaryLines(result, jobDir, swept)) say(line);
  }
  return report.valid ? 0 : 1;
}

export function registerRun(program: Command): void {
  const command = program
    .command('run')
    .description('Run harbor-layout tasks (a dataset directory, or one task directory) and write a job directory with a report')
    .argument('<tasks>', 'a dataset directory (one subdirectory per task) or one task directory');
  addBackendOptions(command);
  command
    .option('--agent <agent>', "'oracle' (the task's solution), 'none', or a shell command run in the sandbox", 'oracle')
    .option('--attempts <n>', 'attempts per task, the first included (only transient infrastructure failures are retried)', '3')
    .option('--concurrency <n>', 'tasks running at once', '4')
    .option('--deadline <duration>', 'stop the run after this long (e.g. 2h); unfinished tasks are reported as not run')
    .option('--job-dir <dir>', 'where results, the journal and report.json go (default ./berth-jobs/<tasks dir name>); the same job dir resumes')
    .option('--filter <glob>', 'only tasks whose id matches (repeatable; * ? [..]); other task directories are not even read', collect)
    .option('--fresh', 'start the job over: the job dir of an earlier run is moved aside (<dir>.replaced-<time>), not deleted')
    .option('--json', 'print the run report as JSON on stdout (progress goes to stderr)')
    .option(
      '--snapshot-setup <command>',
      'set each task up once with this shell command (as root), snapshot it, and start every trial of the task from the snapshot (docker, modal)',
    )
    .option('--pool <n>', 'keep n sandboxes started ahead per task (warm pools, for its retries; never more than --attempts); idle ones go after a minute')
    .addHelpText(
      'after',
      `
Exit status: 0 when the run is valid, 1 when it is not (the reasons are printed), 2 on a usage or
configuration error. Ctrl-C once stops gracefully (report written, stopped tasks not_run); twice exits
at once. Running the same command again resumes: settled attempts are reused, none run twice; a
task whose files changed runs again. A job dir of another run (another --agent, --backend, cluster
or --attempts) is refused: --fresh starts over, or give another --job-dir.

Examples:
  berth run examples/tasks
  berth run ./datasets/swebench --agent 'my-agent --model x' --concurrency 16 --deadline 6h --filter 'django-*'`,
    )
    .action(async (tasks: string, opts: RunOptions) => {
      process.exitCode = await runCommand(tasks, opts);
    });
}
