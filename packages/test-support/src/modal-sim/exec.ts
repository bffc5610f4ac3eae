// One TaskExecStart: a `docker exec` on a hijacked connection (stdin out, multiplexed output back),
// with stdout and stderr kept whole so readers can start at any absolute offset, stdin taken in
// offset order, and the way the process ended. With pty_info, a real pseudo-terminal: the engine's
// TTY exec, sized as asked, its one raw stream on stdout (stderr stays empty, as Modal documents).
import { readdir, readFile } from 'node:fs/promises';
import type { Duplex } from 'node:stream';
import type Docker from 'dockerode';
import { demuxer } from './docker-stream.js';
import { Code, RpcError } from './grpc-server.js';
import { Changes } from './util.js';

export type ExitStatus = { code: number } | { signal: number };

/** Output with absolute offsets: chunks are kept as they came. */
export class OutputBuffer {
  readonly #chunks: Buffer[] = [];
  #starts: number[] = [];
  length = 0;
  /** No more output will come. */
  ended = false;

  push(chunk: Buffer): void {
    this.#starts.push(this.length);
    this.#chunks.push(chunk);
    this.length += chunk.length;
  }

  /** Up to `max` bytes from `offset` (fewer at a chunk boundary). */
  read(offset: number, max: number): Buffer {
    if (offset >= this.length) return Buffer.alloc(0);
    let i = this.#starts.length - 1;
    while (i > 0 && (this.#starts[i] as number) > offset) i--;
    const chunk = this.#chunks[i] as Buffer;
    const at = offset - (this.#starts[i] as number);
    return chunk.subarray(at, at + max);
  }
}

export interface ExecRequest {
  argv: string[];
  env: string[];
  workdir?: string;
  /** Where each stream goes: kept, discarded, or (stderr) merged into stdout. */
  stdout: 'pipe' | 'devnull';
  stderr: 'pipe' | 'devnull' | 'stdout';
  /** pty_info: a terminal of this size. */
  pty?: { rows: number; cols: number };
}

export class ExecProcess {
  readonly stdout = new OutputBuffer();
  readonly stderr = new OutputBuffer();
  readonly changes = new Changes();
  exit?: ExitStatus;
  stdinReceived = 0;
  stdinClosed = false;
  #socket?: Duplex;
  #exec?: Docker.Exec;
  #writes: Promise<void> = Promise.resolve();
  #killed = false;
  #tty = false;
  #poll?: NodeJS.Timeout;

  constructor(
    readonly execId: string,
    /** The TaskExecStart request's bytes: a retry must match them. */
    readonly requestKey: string,
  ) {}

  async start(container: Docker.Container, req: ExecRequest): Promise<void> {
    const exec = await container.exec({
      Cmd: req.argv,
      AttachStdin: true,
      AttachStdout: true,
      AttachStderr: true,
      Tty: req.pty !== undefined,
      Env: req.env,
      ...(req.workdir ? { WorkingDir: req.workdir } : {}),
    });
    this.#exec = exec;
    const socket = (await exec.start({ hijack: true, stdin: true, ...(req.pty ? { Tty: true } : {}) })) as Duplex;
    this.#socket = socket;
    this.#tty = req.pty !== undefined;
    // The engine sizes an exec's terminal only once it runs.
    if (req.pty && req.pty.rows > 0 && req.pty.cols > 0) exec.resize({ h: req.pty.rows, w: req.pty.cols }).catch(() => undefined);
    if (req.stdout === 'devnull') this.stdout.ended = true;
    if (req.stderr !== 'pipe' || req.pty) this.stderr.ended = true;
    const target = (stream: number) =>
      stream === 2
        ? req.stderr === 'pipe'
          ? this.stderr
          : req.stderr === 'stdout' && req.stdout === 'pipe'
            ? this.stdout
            : undefined
        : req.stdout === 'pipe'
          ? this.stdout
          : undefined;
    const demux = demuxer((stream, payload) => target(stream)?.push(payload));
    socket.on('data', (chunk: Buffer) => {
      // A terminal's output is one raw stream, not framed.
      if (this.#tty) {
        if (req.stdout === 'pipe') this.stdout.push(Buffer.from(chunk));
      } else demux(chunk);
      this.changes.notify();
    });
    const ended = () => {
      this.stdout.ended = true;
      this.stderr.ended = true;
      this.changes.notify();
      void this.#settle();
    };
    socket.on('end', ended);
    socket.on('close', ended);
    socket.on('error', () => undefined);
    // A child that keeps stdout open outlives the process: ask the engine too.
    this.#poll = setInterval(() => void this.#settle(), 1000);
  }

  /** Records the exit once the engine says the process is done. */
  async #settle(): Promise<void> {
    if (this.exit || !this.#exec) return;
    for (let i = 0; i < 50 && !this.exit; i++) {
      const info = await this.#exec.inspect().catch(() => undefined);
      if (info && info.Running === false && info.ExitCode !== null) {
        this.#finish(this.#killed ? { signal: 9 } : exitStatus(info.ExitCode));
        return;
      }
      // Output ends a moment before the engine records the exit code.
      if (!this.stdout.ended || !this.stderr.ended) return;
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  #finish(status: ExitStatus): void {
    if (this.exit) return;
    this.exit = status;
    clearInterval(this.#poll);
    this.changes.notify();
  }

  /** Writes in offset order; a retried write only adds the bytes not received yet. */
  write(offset: number, data: Uint8Array, eof: boolean): Promise<void> {
    const next = this.#writes.then(() => this.#write(offset, data, eof));
    this.#writes = next.catch(() => undefined);
    return next;
  }

  async #write(offset: number, data: Uint8Array, eof: boolean): Promise<void> {
    if (offset > this.stdinReceived)
      throw new RpcError(Code.OUT_OF_RANGE, `stdin write at offset ${offset}, but only ${this.stdinReceived} bytes were received`);
    const fresh = data.subarray(Math.min(this.stdinReceived - offset, data.length));
    if (fresh.length > 0) {
      if (this.stdinClosed) throw new RpcError(Code.FAILED_PRECONDITION, 'stdin was already closed (eof)');
      const socket = this.#socket;
      // Bytes for a process that has exited are accepted and dropped, as a closed pipe would.
      if (socket && !socket.destroyed && !this.exit) await new Promise<void>((resolve) => socket.write(fresh, () => resolve()));
      this.stdinReceived += fresh.length;
    }
    if (eof && !this.stdinClosed) {
      this.stdinClosed = true;
      // Half-close: the process sees EOF while its output still flows back. A terminal has no EOF
      // (and the engine drops a TTY exec's whole connection on a half-close): nothing is done.
      if (!this.#tty && this.#socket && !this.#socket.destroyed) this.#socket.end();
    }
  }

  /** For timeout_secs: SIGKILL the process and its children; reported as signal 9. */
  async kill(): Promise<void> {
    if (this.exit) return;
    this.#killed = true;
    const pid = (await this.#exec?.inspect().catch(() => undefined))?.Pid;
    if (pid) for (const p of await descendants(pid)) killQuietly(p);
    this.#finish({ signal: 9 });
    // Whatever still holds the output open: the connection goes after a moment.
    setTimeout(() => this.#socket?.destroy(), 1000).unref();
  }

  /** The sandbox is gone: nothing more will come. */
  abandon(): void {
    this.stdout.ended = true;
    this.stderr.ended = true;
    clearInterval(this.#poll);
    this.#socket?.destroy();
    this.changes.notify();
  }
}

/**
 * The engine reports a process killed by signal N as exit code 128+N and cannot tell it from a
 * process that exited with that code: the simulator reads 129..159 as signals.
 */
export function exitStatus(code: number): ExitStatus {
  return code > 128 && code < 160 ? { signal: code - 128 } : { code };
}

/** The process and everything below it, from /proc (the engine runs on this host). */
async function descendants(pid: number): Promise<number[]> {
  const out = [pid];
  for (let i = 0; i < out.length; i++) {
    const tasks = await readdir(`/proc/${out[i]}/task`).catch(() => [] as string[]);
    for (const task of tasks) {
      const children = await readFile(`/proc/${out[i]}/task/${task}/children`, 'utf8').catch(() => '');
      for (const child of children.split(/\s+/).filter(Boolean)) out.push(Number(child));
    }
  }
  return out;
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    /* already gone */
  }
}
