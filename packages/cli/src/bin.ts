#!/usr/bin/env node
import { BerthError, CancelledError, CapabilityError, ConfigError, redactSecrets } from '@berth/core';
import { CommanderError } from 'commander';
import { cliWords, remediesOf } from './cli-words.js';
import { buildProgram } from './program.js';
import { ExitStatusError, UsageError } from './usage-error.js';

/** Exit status: 0 fine, 1 the work failed (an invalid run, a failed check), 2 how berth was called or configured, 130 interrupted. */
function exitCodeFor(error: unknown): number {
  // Stopped by Ctrl-C or SIGTERM (berth exec, berth shell), as a shell reports an interrupted command.
  if (CancelledError.isInstance(error)) return 130;
  if (error instanceof UsageError || ConfigError.isInstance(error) || CapabilityError.isInstance(error)) return 2;
  return 1;
}

async function flush(stream: NodeJS.WriteStream): Promise<void> {
  await new Promise<void>((resolve) => stream.write('', () => resolve()));
}

const program = buildProgram();
try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    // --help and --version end here too, with exit code 0; commander has printed its message.
    process.exitCode = error.exitCode === 0 ? 0 : 2;
  } else {
    const shown = error instanceof ExitStatusError ? error.cause : error;
    const kind = BerthError.isInstance(shown) ? `${shown.type}: ` : '';
    process.stderr.write(`berth: ${kind}${cliWords(redactSecrets((shown as Error)?.message ?? String(shown)), remediesOf(shown))}\n`);
    process.exitCode = error instanceof ExitStatusError ? error.exitCode : exitCodeFor(error);
  }
}
await flush(process.stdout);
await flush(process.stderr);
// Backends keep connections alive for reuse; the command is over.
process.exit(process.exitCode ?? 0);
