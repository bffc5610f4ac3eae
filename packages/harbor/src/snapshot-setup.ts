import { ConfigError, remedied, type Backend, type EnvironmentSpecInput, type Snapshot } from '@berth/core';
import { setUpTaskSandbox } from './sandbox-setup.js';
import type { HarborTask } from './task.js';

/** A setup run once per task, whose snapshot every trial of the task starts from (runHarborJob's snapshotSetup). */
export interface SnapshotSetup {
  /** A shell command run as root in a sandbox of the task's environment (an agent's install, caches warmed). */
  command: string;
  /** Default 30 minutes. */
  timeoutMs?: number;
}

const DEFAULT_SETUP_TIMEOUT_MS = 30 * 60_000;

/** TaskSnapshots.uses' key. */
export const attemptKey = (taskId: string, attempt: number) => `${taskId}\u0000${attempt}`;

/** What a trial started from, recorded in its result.json. */
export interface SnapshotUse {
  ref: string;
  /** The setup sandbox the snapshot was taken of. */
  sourceId: string;
}

/**
 * One snapshot per task (by id and environment spec), made at the first trial that needs it and
 * shared by the trials running at once; a setup that failed on the infrastructure is tried again by
 * the next trial, one whose command failed is the run's configuration error (ConfigError naming
 * `snapshotSetup.command`, never a task's zero). removeAll() deletes every snapshot at the job's end.
 */
export class TaskSnapshots {
  readonly #backend: Backend;
  readonly #setup: SnapshotSetup;
  readonly #made = new Map<string, Promise<Snapshot>>();
  /** Which attempts started from a snapshot (task id, attempt), for report.json. */
  readonly uses = new Map<string, SnapshotUse>();

  constructor(backend: Backend, setup: SnapshotSetup) {
    if (!backend.capabilities.snapshot) {
      throw new ConfigError({
        operation: 'config',
        path: 'snapshotSetup',
        ...remedied(
          'no-snapshot-setup',
          'run without snapshotSetup',
          (fix) => `the ${backend.name} backend cannot snapshot a sandbox (capabilities.snapshot is false): ${fix}, or on a backend that can (docker, modal)`,
        ),
      });
    }
    if (typeof setup.command !== 'string' || setup.command.trim() === '') {
      throw new ConfigError({
        operation: 'config',
        path: 'snapshotSetup.command',
        ...remedied('snapshot-setup-command', 'snapshotSetup.command', (option) => `${option} is the shell command that sets a task up; got none`),
      });
    }
    this.#backend = backend;
    this.#setup = setup;
  }

  /** The task's snapshot for this attempt, made now if no trial made it yet. */
  async forTask(task: HarborTask, attempt: number, spec: EnvironmentSpecInput, signal: AbortSignal): Promise<SnapshotUse> {
    const key = `${task.id}\u0000${JSON.stringify(spec)}`;
    let made = this.#made.get(key);
    if (!made) {
      made = this.#make(task, spec, signal);
      this.#made.set(key, made);
      // Not kept when it failed: the next trial tries again (a lost sandbox is worth another go).
      made.catch(() => this.#made.get(key) === made && this.#made.delete(key));
    }
    const snapshot = await made;
    const use = { ref: snapshot.ref, sourceId: snapshot.sourceId };
    this.uses.set(attemptKey(task.id, attempt), use);
    return use;
  }

  async #make(task: HarborTask, spec: EnvironmentSpecInput, signal: AbortSignal): Promise<Snapshot> {
    const env = await this.#backend.start(spec, { signal });
    try {
      await setUpTaskSandbox(env, task, signal);
      const timeoutMs = this.#setup.timeoutMs ?? DEFAULT_SETUP_TIMEOUT_MS;
      const result = await env.exec(['sh', '-c', this.#setup.command], { user: '0', timeoutMs, signal });
      if (result.exitCode !== 0 || result.timedOut) {
        const why = result.timedOut ? `ran past ${timeoutMs} ms` : `exited ${result.exitCode}`;
        throw new ConfigError({
          operation: 'config',
          path: 'snapshotSetup.command',
          environmentId: env.id,
          ...remedied(
            'no-snapshot-setup',
            'run without snapshotSetup',
            (fix) =>
              `the snapshot setup of task ${task.id} ${why}: ${(result.stderr || result.stdout).trim().slice(-300) || '(no output)'}; fix the command, or ${fix}`,
          ),
        });
      }
      return await env.snapshot({ signal });
    } finally {
      await env.teardown().catch(() => undefined);
    }
  }

  /** Delete every snapshot made (the job is over); failures are left to sweep (the images carry berth's labels). */
  async removeAll(): Promise<void> {
    const made = [...this.#made.values()];
    this.#made.clear();
    await Promise.all(made.map((p) => p.then((s) => s.remove()).catch(() => undefined)));
  }
}
