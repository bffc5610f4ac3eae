// Helpers that look inside the sandbox with nothing but the tools the basic image promises.
import type { Environment, ExecResult } from '@berth/core';
import { expect } from 'vitest';
import type { DigestAlgorithm } from './local.js';
import { sleep } from './harness.js';

/** Run a command that must succeed; fail the case with its output otherwise. */
export async function run(env: Environment, command: string | readonly string[], what = 'command'): Promise<ExecResult> {
  const result = await env.exec(command);
  expect(result.exitCode, `${what} failed (exit ${result.exitCode}): ${result.stderr || result.stdout}`).toBe(0);
  return result;
}

/** Which digest tool the image has: sha256sum preferred, md5sum otherwise. */
export async function remoteDigestAlgorithm(env: Environment): Promise<DigestAlgorithm> {
  const r = await env.exec(
    'if command -v sha256sum >/dev/null 2>&1; then echo sha256; elif command -v md5sum >/dev/null 2>&1; then echo md5; else echo none; fi',
  );
  const algo = r.stdout.trim();
  expect(['sha256', 'md5'], 'the basic image needs sha256sum or md5sum').toContain(algo);
  return algo as DigestAlgorithm;
}

/** The digest of a file inside the sandbox. */
export async function remoteDigest(env: Environment, path: string, algorithm: DigestAlgorithm): Promise<string> {
  const r = await run(env, [`${algorithm}sum`, path], `${algorithm}sum ${path}`);
  return r.stdout.trim().split(/\s+/)[0] ?? '';
}

/**
 * Pids of processes inside the sandbox whose command line contains "sleep" then `marker`. The
 * marker is rebuilt by arithmetic in the script, so the script's own command line never matches.
 * Zombies (empty cmdline) do not count: they hold no resources and their parent reaps them.
 */
export async function sleepersWithMarker(env: Environment, marker: number): Promise<string[]> {
  const script = [
    `n=$((${marker - 1}+1))`,
    'for d in /proc/[0-9]*; do',
    '  p=${d#/proc/}',
    '  [ "$p" = "$$" ] && continue',
    '  c=$(cat "$d/cmdline" 2>/dev/null) || continue',
    '  case "$c" in *sleep*"$n"*) echo "$p";; esac',
    'done',
  ].join('\n');
  const r = await env.exec(script);
  return r.stdout.split('\n').filter((line) => line.trim().length > 0);
}

/**
 * Poll until at least `count` processes with the marker run, or `withinMs` passes; returns what was
 * seen. A case shows the probe finding the live processes before it trusts "none left".
 */
export async function waitForSleepers(env: Environment, marker: number, count: number, withinMs: number): Promise<string[]> {
  const deadline = Date.now() + withinMs;
  let seen = await sleepersWithMarker(env, marker);
  while (seen.length < count && Date.now() < deadline) {
    await sleep(50);
    seen = await sleepersWithMarker(env, marker);
  }
  return seen;
}

/** Poll until no process with the marker is left, or `withinMs` passes; returns what survived. */
export async function waitForNoSleepers(env: Environment, marker: number, withinMs: number): Promise<string[]> {
  const deadline = Date.now() + withinMs;
  let left = await sleepersWithMarker(env, marker);
  while (left.length > 0 && Date.now() < deadline) {
    await sleep(100);
    left = await sleepersWithMarker(env, marker);
  }
  return left;
}
