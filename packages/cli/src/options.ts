import { parseMirrorRules, type MirrorRule } from '@berth/core';
import { UsageError } from './usage-error.js';

/** commander's collector for repeatable options (--mirror a=b --mirror c=d). */
export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

export function positiveInt(text: string, what: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${what}: expected a whole number of at least 1, got "${text}"`);
  return n;
}

/** --mirror from=to, as many times as needed (the first matching rule wins). */
export function mirrorRules(values: readonly string[] | undefined): MirrorRule[] {
  if (!values || values.length === 0) return [];
  try {
    return parseMirrorRules(values.join(','));
  } catch (error) {
    throw new UsageError(`--mirror: ${(error as Error).message}`);
  }
}
