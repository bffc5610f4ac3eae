// Runs test/support/guardian-child.mjs (a process that starts sandboxes, then waits to be killed)
// and waits for what it made to be gone, for the guardian tests of every backend.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const CHILD = fileURLToPath(new URL('./guardian-child.mjs', import.meta.url));

export interface GuardedChild {
  proc: ChildProcess;
  /** Resolves once its sandboxes all run; rejects with its stderr if it exits first. */
  ready: Promise<void>;
  /** Resolves with the signal that ended it. */
  exited: Promise<NodeJS.Signals | null>;
}

export function startChild(kind: 'docker' | 'k8s' | 'modal', count: number, tag: string, env: Record<string, string> = {}): GuardedChild {
  const proc = spawn(process.execPath, [CHILD, kind, String(count), tag], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<NodeJS.Signals | null>((resolve) => proc.on('exit', (_code, signal) => resolve(signal)));
  const ready = new Promise<void>((resolve, reject) => {
    proc.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
    void exited.then(() => reject(new Error(`the child exited before its sandboxes ran: ${stderr}`)));
  });
  return { proc, ready, exited };
}

/** Polls `count` until it is 0 or `withinMs` passed; returns how long it took (ms), or undefined. */
export async function goneWithin(count: () => Promise<number>, withinMs: number): Promise<number | undefined> {
  const start = Date.now();
  while (Date.now() - start < withinMs) {
    if ((await count()) === 0) return Date.now() - start;
    await new Promise((r) => setTimeout(r, 250));
  }
  return undefined;
}
