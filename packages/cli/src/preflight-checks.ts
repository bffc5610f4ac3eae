import { BerthError, serializeError, type Backend, type EnvironmentSpecInput, type PreflightCheck } from '@berth/core';
import { checkTask, type HarborAgent, type HarborTask } from '@berth/harbor';
import { formatDuration } from './duration.js';

/**
 * A Dockerfile image is only known to build once it has built: start a sandbox from it (the
 * backend builds it, and caches it for the run) and remove it. A step that fails is the row's
 * failure, naming the step, instead of an OK that says "will be built".
 */
export async function buildCheck(backend: Backend, spec: EnvironmentSpecInput): Promise<PreflightCheck> {
  const t0 = performance.now();
  try {
    const env = await backend.start(spec);
    await env.teardown();
    return { name: 'build', status: 'ok', message: `built and started in ${formatDuration(performance.now() - t0)}; the run uses this build` };
  } catch (error) {
    const kind = BerthError.isInstance(error) ? `${error.type}: ` : '';
    return { name: 'build', status: 'fail', message: `${kind}${(error as Error).message}`, error: serializeError(error) };
  }
}

/** One task that cannot run as written (whatever the backend), with why. */
export interface TaskRow {
  task: string;
  checks: PreflightCheck[];
}

/** Every task's own problems (no solve.sh for the oracle, a CRLF script...): those with any. */
export async function taskRows(tasks: readonly HarborTask[], agent: HarborAgent): Promise<TaskRow[]> {
  const rows: TaskRow[] = [];
  for (const task of tasks) {
    const checks = await checkTask(task, agent);
    if (checks.length > 0) rows.push({ task: task.id, checks });
  }
  return rows;
}
