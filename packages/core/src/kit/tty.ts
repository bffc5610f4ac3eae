import type { ExecOptions } from '../contract.js';
import { ConfigError, type Operation } from '../errors.js';

export interface TerminalSize {
  rows: number;
  cols: number;
}

/** What `tty: true` gets: the classic VT100 size, what most programs assume without one. */
export const DEFAULT_TERMINAL: TerminalSize = { rows: 24, cols: 80 };
/** A terminal's size is two unsigned shorts (struct winsize). */
const MAX_SIDE = 65_535;

const side = (n: unknown): boolean => typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= MAX_SIDE;

/**
 * `opts.tty` as the terminal to give the command, or undefined for none. A malformed value is the
 * caller's mistake, a ConfigError on `opts.tty`, never a terminal of some other size.
 */
export function terminalSize(tty: ExecOptions['tty'], ctx: { operation: Operation; backend: string; environmentId?: string }): TerminalSize | undefined {
  if (tty === undefined || tty === false) return undefined;
  if (tty === true) return DEFAULT_TERMINAL;
  if (typeof tty === 'object' && tty !== null && side(tty.rows) && side(tty.cols)) return { rows: tty.rows, cols: tty.cols };
  throw new ConfigError({
    ...ctx,
    path: 'opts.tty',
    message: `tty must be true, false or { rows, cols } with whole numbers from 1 to ${MAX_SIDE}; got ${JSON.stringify(tty)}`,
  });
}

/**
 * Some APIs can only size a terminal once its process runs (Docker's exec resize before API 1.42,
 * the Kubernetes resize channel), so a command that asks its size at once (stty size, a TUI's first
 * draw) could see 0x0. This gate waits, bounded (about 2 s), until the terminal has the size asked
 * for, then execs the command, so its PID, signals and exit status stay the command's own. Without
 * a terminal on stdin, or without stty in the image, it does not wait.
 */
const SIZE_GATE = [
  'rows=$1 cols=$2; shift 2; i=0',
  'if [ -t 0 ] && command -v stty >/dev/null 2>&1; then',
  '  while [ $i -lt 200 ] && [ "$(stty size 2>/dev/null)" != "$rows $cols" ]; do sleep 0.01 2>/dev/null; i=$((i+1)); done',
  'fi',
  'exec "$@"',
].join('\n');

/** `argv` behind the size gate. */
export function gateOnTerminalSize(argv: readonly string[], size: TerminalSize): readonly string[] {
  return ['/bin/sh', '-c', SIZE_GATE, 'berth-tty', String(size.rows), String(size.cols), ...argv];
}
