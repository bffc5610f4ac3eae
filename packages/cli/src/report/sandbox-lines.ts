import type { SandboxAccounting } from '@berth/core';
import type { Paint } from './ansi.js';
import { printable } from './format.js';

/** Sandboxes named one per line; past this the rest are counted (report.json names them all). */
export const MAX_NAMED_SANDBOXES = 20;

/**
 * What became of a run's sandboxes, for a terminal: how many were created and removed, and every
 * one a teardown could not remove, named with its backend, task, attempt and error, then what
 * removes it. `berth report` shows it in its summary; `berth run` as it ends, when one was left.
 */
export function sandboxLines(sandboxes: SandboxAccounting, p: Paint): string[] {
  const left = sandboxes.notRemoved;
  const counts = `sandboxes: ${sandboxes.created} created, ${sandboxes.removed} removed`;
  if (left.length === 0) return [counts];
  const lines = [`${counts}, ${p.red(p.bold(`${left.length} NOT removed`))}:`];
  for (const s of left.slice(0, MAX_NAMED_SANDBOXES)) {
    lines.push(`  - ${printable(s.id)} (${printable(s.backend)}) · task ${printable(s.taskId)}, attempt ${s.attempt}: ${printable(s.error)}`);
  }
  if (left.length > MAX_NAMED_SANDBOXES) lines.push(`  ... and ${left.length - MAX_NAMED_SANDBOXES} more (report.json names them all)`);
  // The backend's guardian or the end of `berth run` may have removed them since: the dry run tells.
  lines.push('  `berth sweep --dry-run` lists those still there; `berth sweep` removes them');
  return lines;
}
