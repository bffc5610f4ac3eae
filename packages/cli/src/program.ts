import { Command } from 'commander';
import { registerCensus } from './commands/census.js';
import { registerInit } from './commands/init.js';
import { registerExec, registerShell } from './commands/shell.js';
import { registerPreflight } from './commands/preflight.js';
import { registerRegrade } from './commands/regrade.js';
import { registerReport } from './commands/report.js';
import { registerRun } from './commands/run.js';
import { registerServe } from './commands/serve.js';
import { registerSweep } from './commands/sweep.js';
import { VERSION } from './version.js';

export { VERSION };

/** The `berth` command line: one subcommand per file in commands/. */
export function buildProgram(): Command {
  const program = new Command('berth')
    .version(VERSION)
    .description('berth: run harbor tasks in sandboxes (Docker, Kubernetes, Modal) and say honestly why a trial failed')
    .showHelpAfterError('(run with --help for usage and an example)')
    // Before the subcommands are added, so they inherit it: bin.ts decides the exit status (2).
    .exitOverride()
    .addHelpText(
      'after',
      `
Examples:
  berth init tasks/my-task             a new task that runs as it is, to start from
  berth run examples/tasks             run every task with the oracle agent on Docker
  berth preflight ./dataset            check every image and the backend before a long run
  berth shell examples/tasks/hello-world
  berth report berth-jobs/tasks        summary + report.html
  berth census berth-jobs/tasks        failures grouped into the problems they are`,
    );
  registerInit(program);
  registerRun(program);
  registerPreflight(program);
  registerShell(program);
  registerExec(program);
  registerSweep(program);
  registerServe(program);
  registerReport(program);
  registerCensus(program);
  registerRegrade(program);
  return program;
}
