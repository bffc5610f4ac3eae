import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The built CLI, as `npm test` leaves it (tsc -b runs first). */
export const BIN = fileURLToPath(new URL('../../dist/bin.js', import.meta.url));

export interface BinResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface BinOptions {
  cwd?: string;
  env?: Record<string, string | undefined>;
  input?: string;
  timeoutMs?: number;
  /** Another copy of the CLI to run (an install elsewhere). */
  bin?: string;
}

/** Run `berth <args>` as a user would (a child process, no TTY) and collect what it printed. */
export function berth(args: readonly string[], opts: BinOptions = {}): Promise<BinResult> {
  return collect(spawnBerth(args, opts), opts);
}

export function spawnBerth(args: readonly string[], opts: BinOptions = {}): ChildProcess {
  return spawn(process.execPath, [opts.bin ?? BIN, ...args], {
    cwd: opts.cwd ?? process.cwd(),
    env: { ...process.env, NO_COLOR: '1', ...opts.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

/** `keepStdin`: leave stdin open for the test to write to (a pty: ending it would end what the terminal can send). */
export function collect(child: ChildProcess, opts: Pick<BinOptions, 'input' | 'timeoutMs'> & { keepStdin?: boolean } = {}): Promise<BinResult> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  if (opts.input !== undefined) child.stdin?.end(opts.input);
  else if (!opts.keepStdin) child.stdin?.end();
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 120_000);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/**
 * `berth <args>` under a real pseudo-terminal: util-linux's `script` gives the command a pty and
 * copies what we write to it, so \x03 is a real Ctrl-C (the line discipline sends SIGINT to the
 * foreground process group) and a shell in the sandbox sees typed keys. `-e` returns the
 * command's exit status.
 */
export function spawnInPty(args: readonly string[], opts: BinOptions & { cols?: number; rows?: number } = {}): ChildProcess {
  const quoted = [process.execPath, BIN, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  const sizing = `stty cols ${opts.cols ?? 120} rows ${opts.rows ?? 40} 2>/dev/null; `;
  return spawn('script', ['-qfec', `${sizing}exec ${quoted}`, '/dev/null'], {
    cwd: opts.cwd ?? process.cwd(),
    env: { ...process.env, TERM: 'xterm', NO_COLOR: '1', ...opts.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

/** Resolves when `text` (a string or pattern) has appeared in what the child printed. */
export function waitForOutput(child: ChildProcess, pattern: RegExp, timeoutMs = 60_000): Promise<string> {
  let seen = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.stdout?.off('data', onData);
      reject(new Error(`timed out waiting for ${pattern} in:\n${seen.slice(-3000)}`));
    }, timeoutMs);
    const onData = (c: Buffer) => {
      seen += c.toString();
      if (pattern.test(seen)) {
        clearTimeout(timer);
        child.stdout?.off('data', onData);
        resolve(seen);
      }
    };
    child.stdout?.on('data', onData);
  });
}
