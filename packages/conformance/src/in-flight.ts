import type { Environment, ExecOptions, ExecResult } from '@berth/core';

/** What execInFlight's command prints first, and waits for. */
const MARKER = 'berth-in-flight';

/**
 * An exec known to be running, for injecting a fault mid-exec without guessing how long the
 * backend takes to get there: the command prints a marker first, and `started` resolves when the
 * marker arrives (or rejects with the exec's own error, if it ended before). `result` is the
 * exec's promise (its rejection is marked handled: await it to see it).
 */
export function execInFlight(
  env: Environment,
  command: string,
  opts: Omit<ExecOptions, 'onStdout'> = {},
): { started: Promise<void>; result: Promise<ExecResult> } {
  let seen!: () => void;
  const marked = new Promise<void>((resolve) => (seen = resolve));
  let out = '';
  const result = env.exec(`echo ${MARKER}; ${command}`, {
    ...opts,
    onStdout: (chunk) => {
      out += Buffer.from(chunk).toString('utf8');
      if (out.includes(MARKER)) seen();
    },
  });
  result.catch(() => undefined);
  const started = Promise.race([
    marked,
    result.then((r) => {
      if (!out.includes(MARKER)) throw new Error(`the command ended (exit ${r.exitCode}) before it printed its marker: ${r.stderr.slice(-200)}`);
    }),
  ]);
  return { started, result };
}
