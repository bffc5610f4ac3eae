import type { HarborTask } from '@berth/harbor';

/**
 * What a task.toml sets that berth does not use (a typo such as [verifer] among them), said once
 * per task before anything runs: otherwise it is only in result.json, where nobody looks first.
 */
export function printNotes(tasks: readonly HarborTask[], say: (text: string) => void): void {
  for (const task of tasks) for (const note of task.notes) say(`note: ${task.id}: ${note}`);
}
