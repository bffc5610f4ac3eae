import type { Command } from 'commander';
import { addBackendOptions, loadBackend, type BackendFlags } from '../backends.js';
import { parseDuration } from '../duration.js';

interface SweepOptions extends BackendFlags {
  olderThan?: string;
  dryRun?: boolean;
  json?: boolean;
}

export async function sweepCommand(opts: SweepOptions): Promise<number> {
  const olderThanMs = opts.olderThan === undefined ? undefined : parseDuration(opts.olderThan, '--older-than');
  const backend = await loadBackend(opts);
  const report = await backend.sweep({ ...(olderThanMs !== undefined ? { olderThanMs } : {}), ...(opts.dryRun ? { dryRun: true } : {}) });
  if (opts.json) {
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } else {
    const listed = opts.dryRun ? (report.wouldRemove ?? []) : report.removed;
    const verb = opts.dryRun ? 'would remove' : 'removed';
    const lines = listed.map((id) => `${verb} ${id}`);
    for (const f of report.failed) lines.push(`FAILED to remove ${f.id}: ${f.message}`);
    lines.push(`${backend.name}: ${verb} ${listed.length} orphaned sandbox resource(s)${report.failed.length ? `, ${report.failed.length} failed` : ''}`);
    process.stdout.write(`${lines.join('\n')}\n`);
  }
  return report.failed.length > 0 ? 1 : 0;
}

export function registerSweep(program: Command): void {
  const command = program
    .command('sweep')
    .description('Remove sandboxes berth left behind: those of processes that died (a kill -9, a crash), and with --older-than, any older than that');
  addBackendOptions(command, { mirror: false, sandboxes: false })
    .option('--older-than <duration>', "also remove berth's sandboxes older than this (e.g. 2h), even if their process lives or runs elsewhere")
    .option('--dry-run', 'list what would be removed, remove nothing')
    .option('--json', 'print the sweep report as JSON')
    .addHelpText(
      'after',
      `
Only resources carrying berth's labels are ever touched. A sandbox of a live berth process on this
host is left alone unless --older-than says it is too old.

Examples:
  berth sweep --dry-run
  berth sweep --backend k8s --older-than 6h`,
    )
    .action(async (opts: SweepOptions) => {
      process.exitCode = await sweepCommand(opts);
    });
}
