/**
 * A mistake in how berth was called (a bad option, a missing directory, a backend not installed):
 * the CLI prints the message and exits 2. Infrastructure and task failures are never this.
 */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}
