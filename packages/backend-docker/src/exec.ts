import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Duplex } from 'node:stream';
import type Docker from 'dockerode';
import { TailBuffer, type ExecOptions, type ExecResult } from '@berth/core';
import { DockerStreamDemuxer } from './demux.js';

export const DEFAULT_MAX_OUTPUT = 10 * 1024 * 1024;
/** Every process an exec starts inherits this variable; the tree killer finds them by it. */
export const EXEC_MARKER = 'BERTH_EXEC_ID';

/**
 * Kills the command's whole process tree: every process that carries BERTH_EXEC_ID=<id> in its
 * environment, the command's own PID when known (it may have cleared its environment: env -i,
 * sudo), and every descendant of those, found by parent PID. Marked processes are stopped first,
 * until no new one appears (so nothing forks away or gets reparented during the sweep), then all
 * are killed; repeated until none is left. Needs only sh and cat in the image.
 */
const KILL_TREE_SCRIPT = [
  'id=$1; root=$2; self=$$; round=0',
  'while [ $round -lt 10 ]; do',
  '  round=$((round+1)); marked=" "; changed=1',
  '  while [ $changed = 1 ]; do',
  '    changed=0',
  '    for d in /proc/[0-9]*; do',
  '      p=${d#/proc/}',
  '      [ "$p" = "$self" ] && continue',
  '      case "$marked" in *" $p "*) continue;; esac',
  '      hit=0',
  '      [ "$p" = "$root" ] && hit=1',
  `      case "$(cat "$d/environ" 2>/dev/null)" in *"${EXEC_MARKER}=$id"*) hit=1;; esac`,
  '      if [ $hit = 0 ] && read -r stat < "$d/stat" 2>/dev/null; then',
  '        rest=${stat##*) }; set -- $rest',
  '        case "$marked" in *" $2 "*) hit=1;; esac',
  '      fi',
  '      if [ $hit = 1 ]; then kill -STOP "$p" 2>/dev/null; marked="$marked$p "; changed=1; fi',
  '    done',
  '  done',
  '  [ "$marked" = " " ] && exit 0',
  '  kill -KILL $marked 2>/dev/null',
  '  root=',
  'done',
].join('\n');

/** How long the killer may take, and how long the output may go on after it, before giving up. */
const KILL_TIMEOUT_MS = 10_000;
const AFTER_KILL_GRACE_MS = 5_000;

/**
 * The command's PID inside the sandbox, when the engine runs on this host: the exec's host PID's
 * NSpid line ends with it. Undefined for a remote engine (the marker then does the work alone).
 */
async function sandboxPid(exec: Docker.Exec): Promise<string> {
  try {
    const info = await exec.inspect();
    if (!info.Pid) return '';
    const status = await readFile(`/proc/${info.Pid}/status`, 'utf8');
    const nspid = /^NSpid:\s+(.+)$/m.exec(status)?.[1]?.trim().split(/\s+/);
    return nspid && nspid.length > 1 ? nspid[nspid.length - 1]! : '';
  } catch {
    return '';
  }
}

export async function killExecTree(container: Docker.Container, execId: string, rootPid = ''): Promise<void> {
  const work = (async () => {
    const killer = await container.exec({ Cmd: ['/bin/sh', '-c', KILL_TREE_SCRIPT, 'berth-kill', execId, rootPid], AttachStdout: true, AttachStderr: true, User: 'root' });
    const stream = (await killer.start({ hijack: true, stdin: false })) as Duplex;
    await new Promise<void>((resolve) => {
      stream.on('end', resolve);
      stream.on('close', resolve);
      stream.on('error', () => resolve());
      stream.resume();
    });
  })();
  // A stalled engine must not hold the caller's exec forever.
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([work.catch(() => undefined), new Promise<void>((r) => (timer = setTimeout(r, KILL_TIMEOUT_MS)))]);
  clearTimeout(timer);
}

export interface RawExecOutcome {
  result: ExecResult;
  /** The exec ended in a way that suggests the sandbox itself died; the caller checks. */
  suspicious: boolean;
  cancelled: boolean;
  /** The engine never reported an exit code. */
  exitUnknown: boolean;
}

/**
 * Run one command. Resolves with the command's result (non-zero exits and timeouts are data);
 * rejects only when the engine failed. The exit code is read after the output has ended, so no
 * output is lost to a race.
 */
export async function runExec(
  container: Docker.Container,
  argv: readonly string[],
  opts: ExecOptions,
  baseEnv: Record<string, string>,
): Promise<RawExecOutcome> {
  const started = Date.now();
  const execId = randomBytes(8).toString('hex');
  const env = { ...baseEnv, ...opts.env, [EXEC_MARKER]: execId };
  const hasStdin = opts.stdin !== undefined;
  const exec = await container.exec({
    Cmd: [...argv],
    AttachStdout: true,
    AttachStderr: true,
    AttachStdin: hasStdin,
    Tty: false,
    Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
    ...(opts.cwd ? { WorkingDir: opts.cwd } : {}),
  });
  const stream = (await exec.start({ hijack: true, stdin: hasStdin })) as Duplex;

  const max = opts.maxOutputBytes ?? DEFAULT_MAX_OUTPUT;
  const stdout = new TailBuffer(max);
  const stderr = new TailBuffer(max);
  const demux = new DockerStreamDemuxer((which, payload) => {
    if (which === 'stdout') {
      stdout.push(payload);
      opts.onStdout?.(payload);
    } else {
      stderr.push(payload);
      opts.onStderr?.(payload);
    }
  });

  let timedOut = false;
  let cancelled = false;
  let killing: Promise<void> | undefined;
  const kill = () => {
    killing ??= (async () => {
      await killExecTree(container, execId, await sandboxPid(exec)).catch(() => undefined);
      // Whatever the killer could not reach (a process hidden from it), berth does not wait on.
      graceTimer = setTimeout(() => stream.destroy(), AFTER_KILL_GRACE_MS);
    })();
    return killing;
  };
  let graceTimer: NodeJS.Timeout | undefined;
  const timer =
    opts.timeoutMs !== undefined
      ? setTimeout(() => {
          timedOut = true;
          void kill();
        }, opts.timeoutMs)
      : undefined;
  const onAbort = () => {
    cancelled = true;
    void kill();
  };
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  // It may have fired while the exec was being created: then no event will come.
  if (opts.signal?.aborted) onAbort();

  try {
    await new Promise<void>((resolve, reject) => {
      stream.on('data', (chunk: Buffer) => demux.push(chunk));
      stream.on('end', resolve);
      stream.on('close', resolve);
      stream.on('error', reject);
      if (hasStdin) {
        const input = typeof opts.stdin === 'string' ? Buffer.from(opts.stdin) : Buffer.from(opts.stdin as Uint8Array);
        stream.end(input);
      }
    });
  } finally {
    if (timer) clearTimeout(timer);
    opts.signal?.removeEventListener('abort', onAbort);
  }
  if (killing) await killing;
  clearTimeout(graceTimer);

  // The attach stream can end a moment before the engine records the exit code.
  let exitCode: number | null = null;
  for (let i = 0; i < 100; i++) {
    const info = await exec.inspect();
    if (!info.Running) {
      exitCode = info.ExitCode;
      break;
    }
    await new Promise((r) => setTimeout(r, i < 10 ? 5 : 50));
  }

  const stdoutBytes = stdout.bytes();
  const stderrBytes = stderr.bytes();
  const result: ExecResult = {
    // -1 only when berth killed the command and the engine never said how it ended.
    exitCode: exitCode ?? -1,
    stdout: stdoutBytes.toString('utf8'),
    stderr: stderrBytes.toString('utf8'),
    stdoutBytes,
    stderrBytes,
    timedOut,
    truncated: { stdout: stdout.truncated, stderr: stderr.truncated },
    durationMs: Date.now() - started,
  };
  if (timedOut) result.signal = 'SIGKILL';
  // Kept out of JSON: the strings already carry the output.
  Object.defineProperty(result, 'stdoutBytes', { enumerable: false });
  Object.defineProperty(result, 'stderrBytes', { enumerable: false });
  const suspicious = !timedOut && !cancelled && (exitCode === null || exitCode >= 128 || demux.leftover > 0);
  return { result, suspicious, cancelled, exitUnknown: exitCode === null };
}
