import { randomBytes } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type Docker from 'dockerode';
import { TailBuffer, type ExecOptions, type ExecResult } from '@berth/core';
import { DockerStreamDemuxer } from './demux.js';

export const DEFAULT_MAX_OUTPUT = 10 * 1024 * 1024;
/** Every process an exec starts inherits this variable; the tree killer finds them by it. */
export const EXEC_MARKER = 'BERTH_EXEC_ID';

/**
 * Kills every process that carries BERTH_EXEC_ID=<id> in its environment: the command and all its
 * descendants, including ones that double-forked away or ignore SIGTERM. Each round stops what it
 * finds (so nothing forks during the sweep), then kills it. Needs only sh and cat in the image.
 */
const KILL_TREE_SCRIPT = [
  'id=$1; self=$$; round=0',
  'while [ $round -lt 20 ]; do',
  '  round=$((round+1)); found=',
  '  for d in /proc/[0-9]*; do',
  '    p=${d#/proc/}',
  '    [ "$p" = "$self" ] && continue',
  '    case "$(cat "$d/environ" 2>/dev/null)" in',
  `      *"${EXEC_MARKER}=$id"*) kill -STOP "$p" 2>/dev/null && found="$found $p";;`,
  '    esac',
  '  done',
  '  [ -z "$found" ] && exit 0',
  '  kill -KILL $found 2>/dev/null',
  'done',
].join('\n');

export async function killExecTree(container: Docker.Container, execId: string): Promise<void> {
  const killer = await container.exec({ Cmd: ['/bin/sh', '-c', KILL_TREE_SCRIPT, 'berth-kill', execId], AttachStdout: true, AttachStderr: true, User: 'root' });
  const stream = (await killer.start({ hijack: true, stdin: false })) as Duplex;
  await new Promise<void>((resolve) => {
    stream.on('end', resolve);
    stream.on('close', resolve);
    stream.on('error', () => resolve());
    stream.resume();
  });
}

export interface RawExecOutcome {
  result: ExecResult;
  /** The exec ended in a way that suggests the sandbox itself died; the caller checks. */
  suspicious: boolean;
  cancelled: boolean;
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
    killing ??= killExecTree(container, execId).catch(() => undefined);
    return killing;
  };
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
  return { result, suspicious, cancelled };
}
