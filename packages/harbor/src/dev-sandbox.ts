import type { Backend, Environment } from '@berth/core';
import type { HostEnv } from './env-template.js';
import { setUpTaskSandbox } from './sandbox-setup.js';
import { buildSpec, type SpecOverrides } from './spec.js';
import type { HarborTask } from './task.js';

export interface TaskSandboxOptions {
  signal?: AbortSignal;
  specOverrides?: SpecOverrides;
  hostEnv?: HostEnv;
  /** Also upload tests/ to /tests (default true) and solution/ to /solution (default true, when the task has one). */
  upload?: { tests?: boolean; solution?: boolean };
}

/**
 * A task's sandbox as a trial sees it before the agent runs (the spec harbor would use, /logs
 * made, environment/ copied into the workdir, the healthcheck passed), plus the task's tests and
 * solution where a trial would put them: for a person working on the task by hand (`berth shell`).
 * The caller owns the environment and tears it down; if setting it up fails, it is removed first.
 */
export async function startTaskSandbox(backend: Backend, task: HarborTask, options: TaskSandboxOptions = {}): Promise<Environment> {
  const signal = options.signal ?? new AbortController().signal;
  const { spec } = buildSpec(task, backend, options.specOverrides, options.hostEnv);
  const env = backend.environment(spec);
  try {
    await env.start({ signal });
    await setUpTaskSandbox(env, task, signal);
    const scripts: string[] = [];
    if (options.upload?.tests !== false) {
      await env.uploadDir(task.testsDir, '/tests', { signal });
      scripts.push('/tests/test.sh');
    }
    if (options.upload?.solution !== false && task.solutionDir) {
      await env.uploadDir(task.solutionDir, '/solution', { signal });
      scripts.push('/solution/solve.sh');
    }
    // Executable, as a trial makes them before running them, so `/tests/test.sh` runs by hand too.
    if (scripts.length > 0) await env.exec(['chmod', '+x', ...scripts], { user: '0', signal });
    return env;
  } catch (error) {
    await env.teardown().catch(() => undefined);
    throw error;
  }
}
