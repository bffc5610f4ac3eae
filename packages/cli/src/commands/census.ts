import type { Remedy } from '@berth/core';
import type { Command } from 'commander';
import { cliWords, remediesOf } from '../cli-words.js';
import { failureKey, groupFailures, normaliseMessage } from '../job/fingerprint.js';
import { loadJob, type AttemptView, type JobData } from '../job/job-data.js';
import { clip } from '../run/settled-line.js';

/** The attempts whose failure was their task's final word: a chosen task failure, or the last failure of an unscored task. */
function finalFailures(job: JobData): Set<string> {
  const out = new Set<string>();
  for (const { summary, attempts } of job.tasks) {
    if (!summary.failureType) continue;
    const last = summary.chosenAttempt ?? attempts.at(-1)?.attempt;
    if (last !== undefined) out.add(`${summary.taskId}#${last}`);
  }
  return out;
}

/**
 * The remedies each problem's attempts name (their result.json errors), by fingerprint, with their
 * words normalised as the pattern they are found in was.
 */
function remediesByFingerprint(attempts: readonly AttemptView[]): Map<string, Remedy[]> {
  const out = new Map<string, Remedy[]>();
  for (const a of attempts) {
    if (a.status !== 'failed') continue;
    const key = failureKey(a).fingerprint;
    const known = out.get(key) ?? [];
    for (const r of remediesOf(a.result?.failure?.error)) {
      const says = normaliseMessage(r.says);
      if (!known.some((k) => k.id === r.id && k.says === says)) known.push({ id: r.id, says });
    }
    out.set(key, known);
  }
  return out;
}

export async function censusCommand(jobDir: string, opts: { json?: boolean; examples: string }): Promise<number> {
  const job = await loadJob(jobDir);
  const attempts = job.tasks.flatMap((t) => t.attempts);
  const groups = groupFailures(attempts, finalFailures(job), Math.max(1, Number(opts.examples) || 3));
  const failed = attempts.filter((a) => a.status === 'failed');
  const remedies = remediesByFingerprint(failed);
  if (opts.json) {
    process.stdout.write(`${JSON.stringify({ jobDir: job.jobDir, failedAttempts: failed.length, tasks: job.tasks.length, groups }, null, 2)}\n`);
    return 0;
  }
  const lines = [
    `${groups.length} problem(s) among ${failed.length} failed attempt(s) of ${new Set(failed.map((a) => a.taskId)).size} task(s) (${job.tasks.length} tasks in the run)`,
    '',
  ];
  // Off a terminal (a log, a pipe) nothing is cut: the end of a message says what to do.
  const width = process.stdout.isTTY ? Math.max(60, (process.stdout.columns ?? 120) - 8) : Infinity;
  for (const g of groups) {
    lines.push(`${String(g.attempts).padStart(5)}  ${g.category}  ${g.type}  (${g.tasks} task(s), final for ${g.finalFor})`);
    // In the CLI's words, as the run printed them (flags, not library options).
    lines.push(`       ${clip(cliWords(g.pattern, remedies.get(g.fingerprint) ?? []), width)}`);
    const more = g.tasks - g.exampleTasks.length;
    lines.push(`       e.g. ${g.exampleTasks.join(', ')}${more > 0 ? ` (+${more} more)` : ''}`);
    lines.push('');
  }
  if (groups.length === 0) lines.push('no failed attempts');
  process.stdout.write(`${lines.join('\n').trimEnd()}\n`);
  return 0;
}

export function registerCensus(program: Command): void {
  program
    .command('census')
    .description(
      'Group the failed attempts of a finished run by fingerprint (category, type, normalised message), so many failures read as the few problems they are',
    )
    .argument('<job-dir>', 'a job directory written by berth run')
    .option('--examples <n>', 'example tasks shown per problem', '3')
    .option('--json', 'print the groups as JSON')
    .addHelpText(
      'after',
      `\nMessages are normalised by replacing task ids, image references, ids, addresses and numbers.\n\nExample:\n  berth census berth-jobs/swebench --json | jq '.groups[0]'`,
    )
    .action(async (jobDir: string, opts: { json?: boolean; examples: string }) => {
      process.exitCode = await censusCommand(jobDir, opts);
    });
}
