import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { loadJob } from '../job/job-data.js';
import { renderReportHtml } from '../report/html.js';
import { renderSummary } from '../report/summary.js';

interface ReportOptions {
  html: boolean;
  allTasks?: boolean;
  out?: string;
  json?: boolean;
}

export async function reportCommand(jobDir: string, opts: ReportOptions): Promise<number> {
  const job = await loadJob(jobDir);
  let htmlPath: string | undefined;
  if (opts.html) {
    htmlPath = resolve(opts.out ?? join(job.jobDir, 'report.html'));
    await writeFile(htmlPath, renderReportHtml(job));
  }
  if (opts.json) {
    process.stdout.write(`${JSON.stringify({ ...job.report, ...(htmlPath ? { html: htmlPath } : {}) }, null, 2)}\n`);
  } else {
    process.stdout.write(
      renderSummary(job, { color: process.stdout.isTTY === true && !process.env.NO_COLOR, ...(opts.allTasks ? { taskRows: Infinity } : {}) }),
    );
    if (htmlPath) process.stdout.write(`\nreport.html: ${htmlPath}\n`);
  }
  return job.report.report.valid ? 0 : 1;
}

export function registerReport(program: Command): void {
  program
    .command('report')
    .description('Summarise a finished run (coverage, validity and why, failures by category and type, retries) and write a self-contained report.html')
    .argument('<job-dir>', 'a job directory written by berth run')
    .option('--out <file>', 'where report.html goes (default <job-dir>/report.html)')
    .option('--no-html', 'only the terminal summary')
    .option('--all-tasks', 'list every task in the summary (default: the first 50, problems first)')
    .option('--json', "print the run's report.json (and the report.html path)")
    .addHelpText(
      'after',
      `\nExit status: 0 when the run is valid, 1 when it is not, 2 on a usage error.\n\nExample:\n  berth report berth-jobs/tasks && xdg-open berth-jobs/tasks/report.html`,
    )
    .action(async (jobDir: string, opts: ReportOptions) => {
      process.exitCode = await reportCommand(jobDir, opts);
    });
}
