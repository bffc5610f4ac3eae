// Checks a request's params before anything runs: a wrong one is a ConfigError naming it
// (`params.argv`), which the client can put in its own words (an --ek key, an argument).
import { ConfigError } from '@berth/core';

type Kind = 'string' | 'number' | 'boolean' | 'object' | 'string[]' | 'record' | 'network';

function is(value: unknown, kind: Kind): boolean {
  switch (kind) {
    case 'string[]':
      return Array.isArray(value) && value.every((v) => typeof v === 'string');
    case 'record':
      return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.values(value).every((v) => typeof v === 'string');
    case 'object':
      return typeof value === 'object' && value !== null && !Array.isArray(value);
    case 'network':
      return typeof value === 'string' || is(value, 'object');
    default:
      return typeof value === kind;
  }
}

const SAID: Record<Kind, string> = {
  string: 'a string',
  number: 'a number',
  boolean: 'true or false',
  object: 'an object',
  'string[]': 'an array of strings',
  record: 'an object of strings',
  network: "'public', 'none' or { allow: [...] }",
};

/** The params as an object; each field named in `required` and `optional` of its kind. */
export function checkParams<T>(method: string, params: unknown, required: Record<string, Kind>, optional: Record<string, Kind> = {}): T {
  const bad = (path: string, message: string) => new ConfigError({ operation: 'config', path: `params${path}`, message: `${method}: ${message}` });
  if (params !== undefined && !is(params, 'object')) throw bad('', 'params must be an object');
  const given = (params ?? {}) as Record<string, unknown>;
  for (const [key, kind] of Object.entries(required)) {
    if (given[key] === undefined) throw bad(`.${key}`, `params.${key} is required (${SAID[kind]})`);
    if (!is(given[key], kind)) throw bad(`.${key}`, `params.${key} must be ${SAID[kind]}, got ${JSON.stringify(given[key])?.slice(0, 80)}`);
  }
  for (const [key, kind] of Object.entries(optional)) {
    if (given[key] !== undefined && !is(given[key], kind))
      throw bad(`.${key}`, `params.${key} must be ${SAID[kind]}, got ${JSON.stringify(given[key])?.slice(0, 80)}`);
  }
  const known = new Set([...Object.keys(required), ...Object.keys(optional)]);
  const unknown = Object.keys(given).filter((k) => !known.has(k));
  if (unknown.length > 0)
    throw bad(`.${unknown[0]}`, `unknown ${unknown.length > 1 ? 'params' : 'param'} ${unknown.join(', ')} (known: ${[...known].join(', ')})`);
  return given as T;
}
