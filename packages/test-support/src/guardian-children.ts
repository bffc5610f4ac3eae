// Runs guardian-child.mjs (a process that starts sandboxes, then waits to be killed)
// and waits for what it made to be gone, for the guardian tests of every backend.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const CHILD = fileURLToPath(new URL('./guardian-child.mjs', import.meta.url));
const WORKER_CHILD = fileURLToPath(new URL('./guardian-worker-child.mjs', import.meta.url));

export interface GuardedChild {
  proc: ChildProcess;
  /** Resolves once its sandboxes all run; rejects with its stderr if it exits first. */
  ready: Promise<void>;
  /** Resolves with the signal that ended it. */
  exited: Promise<NodeJS.Signals | null>;
}

/** A process whose worker thread starts a Docker sandbox tagged `tag` and ends; the process lives on. */
export function startWorkerChild(tag: string): GuardedChild {
  return watch(spawn(process.execPath, [WORKER_CHILD, tag], { stdio: ['ignore', 'pipe', 'pipe'] }));
}

/** `ownGroup`: the child leads a process group of its own, for a kill of the whole group. */
export function startChild(kind: 'docker' | 'k8s' | 'modal', count: number, tag: string, env: Record<string, string> = {}, ownGroup = false): GuardedChild {
  const proc = spawn(process.execPath, [CHILD, kind, String(count), tag], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
    detached: ownGroup,
  });
  return watch(proc);
}

function watch(proc: ChildProcess): GuardedChild {
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<NodeJS.Signals | null>((resolve) => proc.on('exit', (_code, signal) => resolve(signal)));
  const ready = new Promise<void>((resolve, reject) => {
    proc.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
    void exited.then(() => reject(new Error(`the child exited before its sandboxes ran: ${stderr}`)));
  });
  // A test that kills the child before it is ready does not await this: no unhandled rejection.
  ready.catch(() => undefined);
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

/** The guardian processes (packages/core's guardian-main.js) whose parent is `pid`, from /proc (Linux). */
export async function guardiansOf(pid: number): Promise<number[]> {
  const { readdir, readFile } = await import('node:fs/promises');
  const found: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8');
      // Field 4 is the parent's pid; field 2, the name, may hold spaces: read after its ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== pid) continue;
      if ((await readFile(`/proc/${entry}/cmdline`, 'utf8')).includes('guardian-main.js')) found.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return found;
}

/** What another process of this user can see of a process: its command line and environment. */
export async function visibleOf(pid: number): Promise<string> {
  const { readFile } = await import('node:fs/promises');
  return `${await readFile(`/proc/${pid}/cmdline`, 'utf8')}\n${await readFile(`/proc/${pid}/environ`, 'utf8')}`;
}
