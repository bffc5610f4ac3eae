import { ConfigError, type Operation } from '../errors.js';

/**
 * Option names a caller may mean by another name (the shape of a CLI flag, another library's
 * spelling): suggested before any by-spelling guess.
 */
const MEANT: Readonly<Record<string, string>> = {
  timeout: 'timeoutMs',
  timeoutSec: 'timeoutMs',
  socket: 'socketPath',
  dockerSocket: 'socketPath',
  kubeConfig: 'kubeconfig',
  kubeconfigPath: 'kubeconfig',
  ns: 'namespace',
  maxOutput: 'maxOutputBytes',
  workdir: 'cwd',
  environment: 'env',
  abortSignal: 'signal',
};

/** Edit distance, for "did you mean" (short names only: options are short). */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const here = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = here;
    }
  }
  return row[b.length]!;
}

/** The known name `name` most likely means, or undefined. */
export function likelyOption(name: string, known: readonly string[]): string | undefined {
  const alias = MEANT[name];
  if (alias !== undefined && known.includes(alias)) return alias;
  const lower = name.toLowerCase();
  const same = known.find((k) => k.toLowerCase() === lower || k.toLowerCase().startsWith(lower) || lower.startsWith(k.toLowerCase()));
  if (same) return same;
  let best: { name: string; d: number } | undefined;
  for (const k of known) {
    const d = distance(lower, k.toLowerCase());
    if (d <= Math.max(1, Math.floor(k.length / 3)) && (!best || d < best.d)) best = { name: k, d };
  }
  return best?.name;
}

/**
 * Refuses option names the receiver does not have: a misspelt option would otherwise be ignored
 * without a word (`exec(cmd, { timeout: 500 })` running with no timeout at all). The ConfigError
 * names the option (`path`, e.g. `options.socket`), what was likely meant, and every name there is.
 */
export function checkOptionNames(
  given: object | undefined,
  known: readonly string[],
  at: { what: string; path: string; backend?: string; operation?: Operation },
): void {
  if (given === undefined || given === null) return;
  for (const name of Object.keys(given)) {
    if (known.includes(name)) continue;
    const meant = likelyOption(name, known);
    throw new ConfigError({
      operation: at.operation ?? 'config',
      ...(at.backend ? { backend: at.backend } : {}),
      path: `${at.path}.${name}`,
      message: `${at.what} has no option "${name}"${meant ? `: did you mean ${meant}?` : ''} (its options: ${[...known].sort().join(', ')})`,
    });
  }
}

/**
 * Every key of T, checked by the compiler: the list must name each of T's options exactly once,
 * so an option added to the type and not to the list fails the build instead of being refused.
 */
export function optionNames<T extends object>() {
  return <const K extends readonly (keyof T & string)[]>(
    ...names: K & ([Exclude<keyof T, K[number]>] extends [never] ? unknown : { missing: Exclude<keyof T, K[number]> })
  ): K => names;
}
