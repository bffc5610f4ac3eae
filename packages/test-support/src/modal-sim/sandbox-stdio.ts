// A V2 sandbox's own stdin, stdout and stderr (its entrypoint's), which clients reach through the
// router (SandboxStdioReadV2, SandboxStdinWriteV2: router-stdio.ts). The simulator attaches to the
// container before starting it, so the output is kept from the first byte, and keeps it after the
// sandbox ends and its container is removed: the SDK reads a sandbox's output after it exited.
import type { Duplex } from 'node:stream';
import type Docker from 'dockerode';
import { demuxer } from './docker-stream.js';
import { OutputBuffer } from './exec.js';
import { Code, RpcError } from './grpc-server.js';
import { Changes } from './util.js';

/** What a V2 sandbox's container needs so that the simulator can attach its stdio. */
export const ATTACHABLE: Partial<Docker.ContainerCreateOptions> = {
  AttachStdin: true,
  AttachStdout: true,
  AttachStderr: true,
  OpenStdin: true,
  // The entrypoint sees EOF once the attached client closes its side (SandboxStdinWriteV2 eof).
  StdinOnce: true,
};

export class SandboxStdio {
  readonly stdout = new OutputBuffer();
  readonly stderr = new OutputBuffer();
  readonly changes = new Changes();
  stdinReceived = 0;
  stdinClosed = false;
  #writes: Promise<void> = Promise.resolve();

  private constructor(readonly socket: Duplex) {}

  /** Attach before container.start(): output from the first byte. */
  static async attach(container: Docker.Container): Promise<SandboxStdio> {
    const socket = (await container.attach({ stream: true, hijack: true, stdin: true, stdout: true, stderr: true })) as Duplex;
    const stdio = new SandboxStdio(socket);
    const demux = demuxer((stream, payload) => (stream === 2 ? stdio.stderr : stdio.stdout).push(payload));
    socket.on('data', (chunk: Buffer) => {
      demux(chunk);
      stdio.changes.notify();
    });
    const ended = () => stdio.end();
    socket.on('end', ended);
    socket.on('close', ended);
    socket.on('error', () => undefined);
    return stdio;
  }

  /** No more output will come (the entrypoint exited, or the sandbox is gone). */
  get ended(): boolean {
    return this.stdout.ended;
  }

  end(): void {
    this.stdout.ended = true;
    this.stderr.ended = true;
    this.changes.notify();
  }

  /** Waits (at most `ms`) for the output in flight after the entrypoint exited. */
  async drained(ms: number): Promise<void> {
    const until = Date.now() + ms;
    while (!this.ended && Date.now() < until) await Promise.race([this.changes.next(), new Promise((r) => setTimeout(r, 50))]);
  }

  /** The sandbox is gone: output ends where it is. */
  close(): void {
    this.end();
    this.socket.destroy();
  }

  /** Stdin in offset order, as ExecProcess.write: a retried write only adds the bytes not received yet. */
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
      // Bytes for an entrypoint that has exited are accepted and dropped, as a closed pipe would.
      if (!this.socket.destroyed && !this.ended) await new Promise<void>((resolve) => this.socket.write(fresh, () => resolve()));
      this.stdinReceived += fresh.length;
    }
    if (eof && !this.stdinClosed) {
      this.stdinClosed = true;
      // Half-close: the entrypoint sees EOF while its output still flows back.
      if (!this.socket.destroyed) this.socket.end();
    }
  }
}
