import { serve } from '@berth/serve';
import type { Command } from 'commander';
import { backendFromOptions } from '../backends.js';
import { VERSION } from '../version.js';
import { UsageError } from '../usage-error.js';

interface ServeFlags {
  stdio?: boolean;
}

/** berth for a client in another language: JSON-RPC on stdin/stdout until stdin ends. */
export async function serveCommand(flags: ServeFlags): Promise<number> {
  if (!flags.stdio) throw new UsageError('berth serve speaks over stdin and stdout only: give --stdio');
  await serve({
    input: process.stdin,
    output: process.stdout,
    version: VERSION,
    createBackend: (params) => backendFromOptions(params.backend, params.options ?? {}, params.buildRepository),
  });
  return 0;
}

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description("berth as a long-lived process for another program (harbor's environment plugin): JSON-RPC 2.0, one message a line")
    .option('--stdio', 'read requests on stdin, answer on stdout (the only transport); logs go to stderr')
    .addHelpText(
      'after',
      `
The protocol (initialize, start, exec, transfers, setNetwork, teardown, shutdown, $/cancel) is
described in @berth/serve's README. When stdin ends, every sandbox this process started is torn
down; if the process is killed, the backend's guardian removes them.

Example:
  echo '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol":1,"backend":"docker"}}' | berth serve --stdio`,
    )
    .action(async (flags: ServeFlags) => {
      process.exitCode = await serveCommand(flags);
    });
}
