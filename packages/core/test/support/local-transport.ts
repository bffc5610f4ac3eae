// A SandboxTransport whose "sandbox" is this machine: processes are real child processes, so the
// kit's exec semantics and tar-over-exec transfers can be tested without any engine. Only used with
// paths under a temporary directory. `faults` lets a test cut a transfer short, as a flaky
// connection would.
import { setTimeout as sleep } from 'node:timers/promises';
import { spawn } from 'node:child_process';
import { PassThrough, Transform, type Writable } from 'node:stream';
import type { CreateContext, ProcessRequest, SandboxProcess, SandboxStatus, SandboxTransport } from '../../src/kit/transport.js';

export interface LocalFaults {
  /** Stop forwarding stdin after this many bytes (and close it), like a connection that drops the rest. */
  stdinLimit?: number;
  /**
   * Forward only this many bytes of a process's stdout and end it there, while the process exits
   * as it did: a transport that closed after the exit status without the rest of the output.
   */
  stdoutLimit?: number;
  /**
   * The exit status arrives this long after the process ended, as by a separate call (Modal's
   * exec wait); abandoning the process before then loses it (code null).
   */
  exitReportDelayMs?: number;
  /** PATH for spawned processes (e.g. one without tar). */
  path?: string;
  running?: boolean;
}

export class LocalTransport implements SandboxTransport {
  readonly faults: LocalFaults;
  readonly spawned: ProcessRequest[] = [];

  constructor(faults: LocalFaults = {}) {
    this.faults = faults;
  }

  async create(_ctx?: CreateContext): Promise<void> {}

  async inspect(): Promise<SandboxStatus> {
    return this.faults.running === false ? { running: false, reason: 'stopped by the test' } : { running: true };
  }

  async remove(): Promise<void> {}

  async spawn(request: ProcessRequest): Promise<SandboxProcess> {
    this.spawned.push(request);
    const child = spawn(request.argv[0]!, request.argv.slice(1), {
      env: { PATH: this.faults.path ?? process.env.PATH ?? '/usr/bin:/bin', ...request.env },
      stdio: [request.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    });
    const ended = new Promise<{ code: number | null; signal?: string }>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', (code, signal) => resolve(signal ? { code: code ?? 128 + 9, signal } : { code }));
    });
    const delay = this.faults.exitReportDelayMs;
    let lose: () => void = () => undefined;
    const lost = new Promise<{ code: null }>((resolve) => (lose = () => resolve({ code: null })));
    const exit = delay === undefined ? ended : Promise.race([ended.then(async (e) => (await sleep(delay), e)), lost]);
    let stdin: Writable | undefined = child.stdin ?? undefined;
    const limit = this.faults.stdinLimit;
    if (stdin && limit !== undefined) {
      const sink = stdin;
      let passed = 0;
      const cut = new Transform({
        transform(chunk: Buffer, _enc, done) {
          const room = Math.max(0, limit - passed);
          passed += chunk.length;
          done(null, room > 0 ? chunk.subarray(0, room) : undefined);
        },
      });
      cut.pipe(sink);
      sink.on('error', () => undefined);
      stdin = cut;
    }
    // Node drains a child's unread stdio when it exits (child_process flushStdio): hold the bytes
    // in streams of our own until the kit reads them, as the transport contract asks.
    const limitOut = this.faults.stdoutLimit;
    let forwarded = 0;
    const stdout = child.stdout!.pipe(
      limitOut === undefined
        ? new PassThrough()
        : new Transform({
            transform(chunk: Buffer, _enc, done) {
              const room = Math.max(0, limitOut - forwarded);
              forwarded += chunk.length;
              done(null, room > 0 ? chunk.subarray(0, room) : undefined);
            },
          }),
    );
    const stderr = child.stderr!.pipe(new PassThrough());
    return {
      ...(stdin ? { stdin } : {}),
      stdout,
      stderr,
      exit,
      pid: async () => (child.pid === undefined ? undefined : String(child.pid)),
      // Stop waiting: end the process berth started (by its PID, through the handle).
      abandon: () => {
        lose();
        child.kill('SIGKILL');
      },
    };
  }

  mapError(): undefined {
    return undefined;
  }
}
