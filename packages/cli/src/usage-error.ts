/**
 * A mistake in how berth was called (a bad option, a missing directory, a backend not installed):
 * the CLI prints the message and exits 2. Infrastructure and task failures are never this.
 */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/**
 * A failure that ends the command with an exit status of its own, printed as the failure beneath
 * it: `berth exec` and `berth shell` exit 125 when the infrastructure failed (as `docker run`
 * does), so that it is never mistaken for the command's own exit 1.
 */
export class ExitStatusError extends Error {
  override readonly name = 'ExitStatusError';
  readonly exitCode: number;
  constructor(cause: unknown, exitCode: number) {
    super(cause instanceof Error ? cause.message : String(cause), { cause });
    this.exitCode = exitCode;
  }
}
