import type { RunResult } from '@berth/core';
import { paint } from '../report/ansi.js';
import { sandboxLines } from '../report/sandbox-lines.js';

/**
 * What `berth run` prints as it ends, after the display: what a resume reused, the scores beside
 * coverage, validity and its reasons, tasks stopped, every sandbox the run could not remove (only
 * when one was left: counted over the whole run, resumed sessions included), then what the
 * end-of-run sweep said (`swept`), and where the report is.
 */
export function runSummaryLines(result: Pick<RunResult, 'report' | 'resume'>, jobDir: string, swept: readonly string[]): string[] {
  const { report, resume } = result;
  const lines: string[] = [];
  if (resume && resume.reusedAttempts > 0)
    lines.push(`resumed: ${resume.reusedAttempts} attempt(s) reused from the journal, ${resume.interruptedAttempts} interrupted one(s) run again`);
  if (resume && resume.changedTasks.length > 0) lines.push(`changed since the last run, so run again: ${resume.changedTasks.join(', ')}`);
  const mean = report.score ? `${report.score.mean.toFixed(3)} over ${report.score.over}` : 'n/a';
  lines.push(
    `scored ${report.scored}/${report.total} (coverage ${report.coverage.toFixed(3)}), mean reward ${mean}, task failures ${report.taskFailures}, infra failed ${report.infraFailed.total}, not run ${report.notRun.total}, ${report.attempts} attempt(s), ${report.retries} retries`,
  );
  lines.push(`valid: ${report.valid ? 'yes' : 'NO'}`);
  for (const reason of report.invalidReasons) lines.push(`  - ${reason}`);
  if (report.notRun.cancelled > 0) lines.push(`stopped: ${report.notRun.cancelled} task(s) not run; run the same command again to resume`);
  lines.push(...sandboxesLeftLines(result), ...swept);
  lines.push(`report: berth report ${jobDir}`);
  return lines;
}

/** The sandboxes the run could not remove, named; nothing when every one was removed. */
export function sandboxesLeftLines(result: Pick<RunResult, 'report'>): string[] {
  const { sandboxes } = result.report;
  return sandboxes.notRemoved.length > 0 ? sandboxLines(sandboxes, paint(false)) : [];
}
