import { readdir, stat } from 'node:fs/promises';
import { join, posix, sep } from 'node:path';
import type { Backend, Environment, TrialContext } from '@berth/core';
import { heldByConvention, type ArtifactRecord } from './artifacts.js';
import type { HostEnv } from './env-template.js';
import { awaitHealthy, prepareSandbox } from './sandbox-setup.js';
import { buildVerifierSpec, type SpecOverrides } from './spec.js';
import type { StepTimer } from './steps.js';
import type { HarborTask } from './task.js';

// harbor's separate verifier (`[verifier] environment_mode = "separate"`): after the agent's
// sandbox is gone, a sandbox of the verifier's own, holding only the agent's artifacts, put back
// at the paths they came from.

export interface VerifierSandboxRun {
  backend: Backend;
  task: HarborTask;
  ctx: TrialContext;
  timer: StepTimer;
  /** The attempt directory: artifacts/ holds what the agent's sandbox left. */
  dir: string;
  hostEnv: HostEnv;
  specOverrides?: SpecOverrides;
  artifacts: readonly ArtifactRecord[];
  /** Told the sandbox as soon as it exists, so the caller can tear it down whatever happens next. */
  made: (env: Environment, notes: string[]) => void;
}

/** Start the verifier's sandbox, prepare it and put the agent's artifacts back; the caller runs the verifier in it. */
export async function startVerifierSandbox(run: VerifierSandboxRun): Promise<Environment> {
  const { backend, task, ctx, timer, dir } = run;
  const verifier = task.verifierEnvironment!;
  const { spec, notes } = buildVerifierSpec(task, backend, run.specOverrides, run.hostEnv);
  const env = backend.environment(spec);
  run.made(env, notes);
  const { signal } = ctx;
  await timer.run('start verifier', () => env.start({ signal }));
  await timer.run('prepare verifier', () => prepareSandbox(env, signal));
  if (verifier.healthcheck) await timer.run('healthcheck verifier', () => awaitHealthy(env, verifier.healthcheck!, signal));
  await timer.run('restore artifacts', () => restoreArtifacts(env, dir, run.artifacts, signal));
  return env;
}

/**
 * Each artifact the agent's sandbox gave, uploaded to the path it came from. The convention
 * directory's copy shares artifacts/ with the others (as in harbor's layout): only its own entries
 * go back to /logs/artifacts.
 */
async function restoreArtifacts(env: Environment, dir: string, artifacts: readonly ArtifactRecord[], signal: AbortSignal): Promise<void> {
  const own = artifacts.filter((a) => !heldByConvention(a));
  const others = new Set(own.filter((a) => a.destination !== 'artifacts').map((a) => a.destination.split(sep)[1]));
  for (const artifact of own) {
    if (artifact.status !== 'copied') continue;
    const local = join(dir, artifact.destination);
    if (artifact.destination === 'artifacts') {
      for (const name of await readdir(local).catch(() => [] as string[])) {
        if (!others.has(name)) await upload(env, join(local, name), posix.join(artifact.source, name), signal);
      }
      continue;
    }
    await upload(env, local, artifact.source, signal);
  }
}

async function upload(env: Environment, local: string, remote: string, signal: AbortSignal): Promise<void> {
  const st = await stat(local).catch(() => undefined);
  if (!st) return;
  if (st.isDirectory()) await env.uploadDir(local, remote, { signal });
  else await env.uploadFile(local, remote, { signal });
}
