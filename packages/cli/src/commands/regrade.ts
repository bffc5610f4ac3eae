import type { Command } from 'commander';
import { loadJob } from '../job/job-data.js';
import { regradeJob, type RegradeResult } from '../job/regrade.js';
import { parseDuration } from '../duration.js';
import { renderTable } from '../table.js';

interface RegradeOptions {
  rewardParser?: string;
  timeout: string;
  json?: boolean;
}

/** The means, never a recorded value standing in for a regraded one, never a mean of nothing. */
function meanLine(mean: RegradeResult['mean']): string {
  if (mean.over === 0) return 'mean reward: n/a (no task has a chosen attempt with a reward)';
  const regraded =
    mean.regraded === null
      ? 'regraded n/a (none of them could be regraded)'
      : `regraded ${mean.regraded.toFixed(3)}${mean.regradedOver === mean.over ? '' : ` over the ${mean.regradedOver} of them that could be regraded`}`;
  return `mean reward over ${mean.over} chosen attempt(s): recorded ${mean.recorded!.toFixed(3)}; ${regraded}`;
}

export async function regradeCommand(jobDir: string, opts: RegradeOptions): Promise<number> {
  const job = await loadJob(jobDir);
  const parser = opts.rewardParser ? { command: opts.rewardParser, timeoutMs: parseDuration(opts.timeout, '--timeout') } : undefined;
  const result = await regradeJob(job, parser);
  if (opts.json) {
    process.stdout.write(`${JSON.stringify({ jobDir: job.jobDir, parser: opts.rewardParser ?? null, ...result }, null, 2)}\n`);
  } else {
    const agreement =
      result.agreement === null
        ? `agreement n/a: no attempt could be regraded${result.errors.length > 0 ? ` (the parser failed on all ${result.errors.length}; the first error is below)` : ''}`
        : `agreement ${(result.agreement * 100).toFixed(1)} % (${result.agreed}/${result.graded})`;
    const lines = [
      `regraded ${result.graded} attempt(s) from their archived verifier output${parser ? ` with \`${parser.command}\`` : " (harbor's reward files)"}; ${result.skipped} had none (infrastructure failures before the verifier)`,
      `${agreement}; ${result.disagreements.length} disagreement(s), ${result.errors.length} parser error(s)`,
      meanLine(result.mean),
    ];
    if (result.disagreements.length > 0) {
      lines.push(
        '',
        renderTable(
          ['TASK', 'ATTEMPT', 'RECORDED', 'REGRADED', 'KIND'],
          result.disagreements.map((d) => [d.taskId, `${d.attempt}${d.chosen ? ' (chosen)' : ''}`, String(d.recorded), String(d.regraded), d.kind ?? '']),
        ),
      );
    }
    for (const e of result.errors) lines.push(`error ${e.taskId} attempt ${e.attempt}: ${e.error}`);
    process.stdout.write(`${lines.join('\n')}\n`);
  }
  return result.disagreements.length > 0 || result.errors.length > 0 ? 1 : 0;
}

export function registerRegrade(program: Command): void {
  program
    .command('regrade')
    .description("Recompute every attempt's reward offline from its archived verifier output and report agreement with the recorded rewards")
    .argument('<job-dir>', 'a job directory written by berth run')
    .option(
      '--reward-parser <cmd>',
      "a shell command that prints the reward: run in the attempt's verifier/ directory with test-stdout.txt on stdin and BERTH_VERIFIER_DIR, BERTH_ATTEMPT_DIR, BERTH_TASK_ID, BERTH_TASK_DIR set (default: re-read reward.txt / reward.json as harbor does)",
    )
    .option('--timeout <duration>', 'per attempt, for the reward parser', '60s')
    .option('--json', 'print every attempt regraded, and the totals, as JSON')
    .addHelpText(
      'after',
      `
Exit status: 0 when every graded attempt agrees, 1 when any disagrees or the parser failed, 2 on a usage error.
A disagreement where the record says 0 and the output says otherwise is a "fake zero".

Example:
  berth regrade berth-jobs/swebench --reward-parser 'grep -q "PASSED" test-stdout.txt && echo 1 || echo 0'`,
    )
    .action(async (jobDir: string, opts: RegradeOptions) => {
      process.exitCode = await regradeCommand(jobDir, opts);
    });
}
