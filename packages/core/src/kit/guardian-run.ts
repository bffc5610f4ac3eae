// The guardian process's work (see guardian.ts), run by guardian-main.js or by a bundle of berth:
// it reads one JSON line (GuardianMessage), rebuilds the backend from it, waits for EOF (the
// process that started it has ended), then removes what that process created.
import { readFileSync } from 'node:fs';
import type { SweepReport } from '../contract.js';
import type { GuardianMessage } from './guardian.js';

/** How long removal is retried (an engine restarting, an API briefly unreachable). */
const RETRY_FOR_MS = 30_000;
const RETRY_EVERY_MS = 2_000;
/** How long after EOF an exiting owner may still show as running. */
const EXIT_SETTLE_MS = 2_000;
/** How often a live owner whose pipe closed is checked. */
const WATCH_EVERY_MS = 1_000;
/** When the second look is taken, after the first sweep. */
const SECOND_PASS_MS = 5_000;

export interface GuardedBackend {
  sweep(opts: { session: string; ownedBy: { pid: number; host: string } }): Promise<SweepReport>;
  close?(): Promise<void>;
}

export const guardianLog = (line: string) => process.stderr.write(`${new Date().toISOString()} berth guardian ${process.pid}: ${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The first line of stdin, and a promise of its end (EOF: the owner is gone). */
function readPipe(): { first: Promise<string>; ended: Promise<void> } {
  let buffered = '';
  let resolveFirst: (line: string) => void;
  let rejectFirst: (error: Error) => void;
  const first = new Promise<string>((resolve, reject) => {
    resolveFirst = resolve;
    rejectFirst = reject;
  });
  const ended = new Promise<void>((resolve) => {
    process.stdin.on('end', resolve);
    // A broken pipe means the same as its end.
    process.stdin.on('error', () => resolve());
  });
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (chunk: string) => {
    buffered += chunk;
    const newline = buffered.indexOf('\n');
    if (newline >= 0) resolveFirst(buffered.slice(0, newline));
  });
  void ended.then(() => rejectFirst(new Error('the pipe ended before the guardian was told what to guard')));
  return { first, ended };
}

/** Is the process running (not ended, not a zombie waiting to be reaped)? */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    // Linux: the state after the name's ')'; Z (zombie) and X (dead) have ended.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2));
  } catch {
    return true;
  }
}

/**
 * EOF normally means the owner has ended: the kernel closes its files as it exits, a moment before
 * the pid is gone, hence the short wait. A pipe closed while the owner runs on (the worker thread
 * that started the guardian ended) must not remove what the live process owns: then the guardian
 * watches the pid instead.
 */
async function untilGone(pid: number): Promise<void> {
  const settle = Date.now() + EXIT_SETTLE_MS;
  while (running(pid) && Date.now() < settle) await sleep(50);
  if (!running(pid)) return;
  guardianLog(`the pipe closed while pid ${pid} runs (a worker thread ended?): watching the pid instead`);
  while (running(pid)) await sleep(WATCH_EVERY_MS);
}

/** Sweep the owner's resources; again every RETRY_EVERY_MS while it fails, until the deadline. */
async function sweepUntilClean(backend: GuardedBackend, owner: GuardianMessage['owner'], deadline: number): Promise<void> {
  for (;;) {
    try {
      const report = await backend.sweep({ session: owner.session, ownedBy: { pid: owner.pid, host: owner.host } });
      if (report.removed.length > 0 || report.failed.length > 0)
        guardianLog(`pid ${owner.pid} ended: removed ${report.removed.length} (${report.removed.join(', ')}), ${report.failed.length} failed`);
      if (report.failed.length === 0 || Date.now() > deadline) return;
    } catch (error) {
      guardianLog(`pid ${owner.pid} ended: sweep failed (${error instanceof Error ? error.message : String(error)})`);
      if (Date.now() > deadline) return;
    }
    await sleep(RETRY_EVERY_MS);
  }
}

/** A backend's guardian module: what the watchdog imports to rebuild the backend. */
export interface GuardianModule {
  guardianBackend(config: unknown): GuardedBackend;
}

/**
 * The watchdog's whole life: read the message, wait for the owner to end, sweep what it made.
 * `load` finds the backend's guardian module from the message (an import of its built file; in a
 * bundle, the bundle's own copy); `check` runs at once, so a guardian that cannot load its module
 * ends now rather than after the owner.
 */
export async function runGuardian(load: { check(message: GuardianMessage): void; load(message: GuardianMessage): Promise<GuardianModule> }): Promise<void> {
  const { first, ended } = readPipe();
  const message = JSON.parse(await first) as GuardianMessage;
  // The owner's environment, for whatever the backend's client reads (never logged).
  Object.assign(process.env, message.env);
  const { owner } = message;
  // Checked now, loaded only when needed: a waiting guardian stays small (bare Node) and takes no
  // CPU from the first start it runs beside.
  load.check(message);
  guardianLog(`guarding ${message.backend} resources of pid ${owner.pid} (session ${owner.session})`);
  await ended;
  await untilGone(owner.pid);
  const mod = await load.load(message);
  const backend = mod.guardianBackend(message.config);
  const deadline = Date.now() + RETRY_FOR_MS;
  await sweepUntilClean(backend, owner, deadline);
  // A create the process sent just before it died may complete on the engine after that sweep
  // listed: look once more when such a request has had time to land.
  await sleep(SECOND_PASS_MS);
  await sweepUntilClean(backend, owner, deadline + SECOND_PASS_MS);
  await backend.close?.();
}
