import { constants } from 'node:os';
import { PassThrough, Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ProcessExit, SandboxProcess } from '@berth/core/backend-kit';
import { GRPC_CODE, GrpcError, type ExecExit, type TaskRouter } from './wire/index.js';

/** The router takes stdin in writes of at most this much. */
const STDIN_CHUNK = 1024 * 1024;
/** A dropped output stream is resumed from its offset this many times in a row before giving up. */
const RESUMES = 8;
const SIGNAL_NAMES = new Map(Object.entries(constants.signals).map(([name, number]) => [number, name]));

/** The sandbox (or its task) is gone: nothing to resume. */
function isGone(error: unknown): boolean {
  return GrpcError.isInstance(error) && error.code === GRPC_CODE.NOT_FOUND;
}

/** Worth asking again: the stream or call was cut, the router was briefly unavailable. */
function isTransient(error: unknown): boolean {
  return (
    GrpcError.isInstance(error) &&
    ([GRPC_CODE.UNAVAILABLE, GRPC_CODE.INTERNAL, GRPC_CODE.UNKNOWN, GRPC_CODE.DEADLINE_EXCEEDED, GRPC_CODE.CANCELLED] as number[]).includes(error.code)
  );
}

/**
 * One process started through the task router, as the kit's SandboxProcess. Output is read with
 * offsets, so a stream cut on the way resumes exactly where it stopped (no byte lost or repeated);
 * stdin is written with offsets, so a retried write is deduplicated by the router.
 */
export class ModalProcess implements SandboxProcess {
  readonly stdout = new PassThrough({ highWaterMark: 4 * 1024 * 1024 });
  readonly stderr = new PassThrough({ highWaterMark: 4 * 1024 * 1024 });
  readonly stdin: Writable | undefined;
  readonly exit: Promise<ProcessExit>;
  readonly #router: TaskRouter;
  readonly #execId: string;
  readonly #stop = new AbortController();
  /** Set when an output stream could not be read to its end. */
  #cut = false;

  /** With a terminal, the end of the caller's input is not sent: a terminal has no end of input. */
  readonly #tty: boolean;

  constructor(router: TaskRouter, execId: string, withStdin: boolean, tty = false) {
    this.#router = router;
    this.#execId = execId;
    this.#tty = tty;
    this.stdin = withStdin ? this.#stdinWriter() : undefined;
    this.exit = Promise.all([this.#pump('stdout', this.stdout), this.#pump('stderr', this.stderr)]).then(() => this.#waitExit());
  }

  abandon(): void {
    this.#stop.abort();
  }

  /** One output stream from offset 0 to its end, resumed from where it stopped when cut. */
  async #pump(fd: 'stdout' | 'stderr', out: PassThrough): Promise<void> {
    let offset = 0;
    let failures = 0;
    try {
      for (;;) {
        try {
          for await (const data of this.#router.read(this.#execId, fd, offset, this.#stop.signal)) {
            offset += data.length;
            failures = 0;
            if (!out.write(data)) await new Promise<void>((resolve) => out.once('drain', resolve));
          }
          return;
        } catch (error) {
          if (this.#stop.signal.aborted || isGone(error) || !isTransient(error) || ++failures > RESUMES) {
            this.#cut = true;
            return;
          }
          await sleep(Math.min(2000, 100 * 2 ** failures), undefined, { signal: this.#stop.signal }).catch(() => undefined);
        }
      }
    } finally {
      out.end();
    }
  }

  async #waitExit(): Promise<ProcessExit> {
    // Given up on (the caller stopped reading): how it ended, if the router already knows.
    if (this.#stop.signal.aborted) return this.#pollOnce();
    if (this.#cut) return { code: null, interrupted: true };
    let failures = 0;
    for (;;) {
      let exit: ExecExit | undefined;
      try {
        exit = await this.#router.wait(this.#execId, this.#stop.signal);
      } catch (error) {
        if (this.#stop.signal.aborted || isGone(error) || !isTransient(error) || ++failures > RESUMES) return { code: null, interrupted: true };
        await sleep(Math.min(2000, 100 * 2 ** failures), undefined, { signal: this.#stop.signal }).catch(() => undefined);
        continue;
      }
      if (!exit) continue;
      if ('code' in exit) return { code: exit.code };
      const name = SIGNAL_NAMES.get(exit.signal);
      return { code: 128 + exit.signal, ...(name ? { signal: name } : {}) };
    }
  }

  async #pollOnce(): Promise<ProcessExit> {
    const exit = await this.#router.poll(this.#execId, AbortSignal.timeout(5000)).catch(() => undefined);
    if (!exit) return { code: null, interrupted: true };
    return 'code' in exit
      ? { code: exit.code }
      : { code: 128 + exit.signal, ...(SIGNAL_NAMES.get(exit.signal) ? { signal: SIGNAL_NAMES.get(exit.signal)! } : {}) };
  }

  /** A process started without stdin: close it at once, as a process would see /dev/null (Modal keeps it open until eof). */
  closeStdin(): Promise<void> {
    return this.#router.write(this.#execId, 0, new Uint8Array(), true, this.#stop.signal);
  }

  #stdinWriter(): Writable {
    let offset = 0;
    const send = async (data: Uint8Array, eof: boolean) => {
      for (let failures = 0; ; failures++) {
        try {
          await this.#router.write(this.#execId, offset, data, eof, this.#stop.signal);
          offset += data.length;
          return;
        } catch (error) {
          if (this.#stop.signal.aborted || !isTransient(error) || failures >= RESUMES) throw error;
          await sleep(Math.min(2000, 100 * 2 ** failures));
        }
      }
    };
    return new Writable({
      highWaterMark: STDIN_CHUNK,
      write: (chunk: Buffer, _encoding, done) => {
        void (async () => {
          for (let at = 0; at < chunk.length; at += STDIN_CHUNK) await send(chunk.subarray(at, at + STDIN_CHUNK), false);
        })().then(
          () => done(),
          (error: unknown) => done(error instanceof Error ? error : new Error(String(error))),
        );
      },
      final: (done) => {
        if (this.#tty) return done();
        send(new Uint8Array(), true).then(
          () => done(),
          (error: unknown) => done(error instanceof Error ? error : new Error(String(error))),
        );
      },
      // A stdin given up on still reaches its end, so that the command is not left waiting on it.
      destroy: (error, done) => {
        if (!this.#tty) send(new Uint8Array(), true).catch(() => undefined);
        done(error);
      },
    });
  }
}
