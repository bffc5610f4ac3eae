import { readFile } from 'node:fs/promises';
import { PassThrough, Writable, type Duplex } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type Docker from 'dockerode';
import { raceAbort, type ProcessExit, type ProcessRequest, type SandboxProcess } from '@berth/core/backend-kit';
import { DockerStreamDemuxer } from './demux.js';

/**
 * The command's PID inside the sandbox, when the engine runs on this host: the exec's host PID's
 * NSpid line ends with it. Undefined for a remote engine (the kit's marker then does the work alone).
 */
async function sandboxPid(exec: Docker.Exec): Promise<string | undefined> {
  try {
    const info = await exec.inspect();
    if (!info.Pid) return undefined;
    const status = await readFile(`/proc/${info.Pid}/status`, 'utf8');
    const nspid = /^NSpid:\s+(.+)$/m.exec(status)?.[1]?.trim().split(/\s+/);
    return nspid && nspid.length > 1 ? nspid[nspid.length - 1] : undefined;
  } catch {
    return undefined;
  }
}

/** How long the engine may take to say how a command ended, after its output ended. */
const EXIT_CODE_WAIT_MS = 10_000;

/**
 * The attach stream can end a moment before the engine records the exit code: ask a few times.
 * null when the engine never says (or stalls): the kit then asks whether the sandbox lives.
 */
async function exitCodeOf(exec: Docker.Exec): Promise<number | null> {
  const deadline = AbortSignal.timeout(EXIT_CODE_WAIT_MS);
  for (let i = 0; i < 100 && !deadline.aborted; i++) {
    const info = await raceAbort(exec.inspect(), deadline).catch((error: unknown) => {
      if (deadline.aborted) return undefined;
      throw error;
    });
    if (info && !info.Running) return info.ExitCode;
    await sleep(i < 10 ? 5 : 50);
  }
  return null;
}

/**
 * One process through the engine's exec API: a hijacked connection carrying stdin out and
 * multiplexed stdout/stderr back, or with a terminal (`request.tty`) the terminal's raw output.
 */
export async function spawnDockerProcess(container: Docker.Container, request: ProcessRequest): Promise<SandboxProcess> {
  const tty = request.tty;
  const exec = await container.exec({
    Cmd: [...request.argv],
    AttachStdout: true,
    AttachStderr: true,
    AttachStdin: request.stdin,
    Tty: tty !== undefined,
    Env: Object.entries(request.env).map(([k, v]) => `${k}=${v}`),
    // By uid, not name: an image without /etc/passwd cannot resolve 'root'.
    ...(request.asRoot ? { User: '0:0' } : request.user !== undefined ? { User: request.user } : {}),
  });
  const socket = (await exec.start({ hijack: true, stdin: request.stdin, ...(tty ? { Tty: true } : {}) })) as Duplex;
  if (tty) {
    // API 1.41 has no ConsoleSize on exec create, and an exec can only be resized once it runs.
    // The kit's argv waits for this size before the command starts; an exec that has already
    // ended cannot be resized (500) and needs no size, so a failure here is nobody's concern.
    exec.resize({ h: tty.rows, w: tty.cols }).catch(() => undefined);
  }
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  // Output waits for its reader: a slow consumer pauses the connection instead of filling memory.
  const full = new Set<PassThrough>();
  const deliver = (target: PassThrough, payload: Buffer) => {
    if (target.write(payload) || full.has(target)) return;
    full.add(target);
    socket.pause();
    target.once('drain', () => {
      full.delete(target);
      if (full.size === 0) socket.resume();
    });
  };
  // A terminal's output is one raw stream (the terminal merged stdout and stderr): nothing to demux.
  const demux = tty ? undefined : new DockerStreamDemuxer((which, payload) => deliver(which === 'stdout' ? stdout : stderr, payload));
  const ended = new Promise<void>((resolve, reject) => {
    socket.on('data', (chunk: Buffer) => (demux ? demux.push(chunk) : deliver(stdout, chunk)));
    socket.on('end', resolve);
    socket.on('close', resolve);
    socket.on('error', reject);
  });
  const exit = ended
    .finally(() => {
      stdout.end();
      stderr.end();
    })
    .then(async (): Promise<ProcessExit> => ({ code: await exitCodeOf(exec), interrupted: (demux?.leftover ?? 0) > 0 }));
  // Writes complete when the engine has the bytes (backpressure); end() half-closes, so the
  // command sees EOF while its output still flows back. Not with a terminal: it has no EOF, and
  // the engine answers a half-close of a TTY exec by dropping the whole connection, output and all
  // (the command runs on, unseen). The kit kills the tree when a stdin fails, so it is left open.
  const close = () => void (tty ? undefined : socket.end());
  const stdin = request.stdin
    ? new Writable({
        write: (chunk: Buffer, _encoding, done) => void socket.write(chunk, done),
        final: (done) => {
          close();
          done();
        },
        // A stdin given up on (its source failed) still closes the command's stdin.
        destroy: (error, done) => {
          close();
          done(error);
        },
      })
    : undefined;
  return {
    ...(stdin ? { stdin } : {}),
    stdout,
    stderr,
    exit,
    pid: () => sandboxPid(exec),
    abandon: () => socket.destroy(),
  };
}
