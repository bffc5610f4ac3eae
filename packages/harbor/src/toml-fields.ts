import { ConfigError } from '@berth/core';

// task.toml is input from outside: every field is checked here, and a wrong one is a ConfigError
// that names the file and the field and says what it should be. Unknown sections and fields are
// ignored on purpose: harbor's task.toml carries many (metadata, version, env tables...) that a
// runner does not need, and refusing them would refuse real tasks.

type Table = Record<string, unknown>;

function isTable(value: unknown): value is Table {
  return value !== null && typeof value === 'object' && !Array.isArray(value) && !(value instanceof Date);
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (value instanceof Date) return `a date (${value.toISOString()})`;
  if (Array.isArray(value)) return 'an array';
  if (isTable(value)) return 'a table';
  return String(value);
}

/** Reads typed fields from one parsed task.toml, failing with a ConfigError naming file and field. */
export class TomlFields {
  readonly #file: string;
  readonly #root: Table;

  constructor(file: string, root: Table) {
    this.#file = file;
    this.#root = root;
  }

  fail(field: string, message: string, cause?: unknown): ConfigError {
    return new ConfigError({
      operation: 'config',
      path: field,
      message: `${this.#file}: ${field} ${message}`,
      ...(cause === undefined ? {} : { cause }),
    });
  }

  /** A section such as [environment]; absent means empty. */
  section(name: string): Table {
    const value = this.#root[name];
    if (value === undefined) return {};
    if (!isTable(value)) throw this.fail(`[${name}]`, `must be a table, got ${describe(value)}`);
    return value;
  }

  #get(section: string, key: string): unknown {
    return this.section(section)[key];
  }

  string(section: string, key: string): string | undefined {
    const value = this.#get(section, key);
    if (value === undefined) return undefined;
    if (typeof value !== 'string' || value.trim() === '') {
      throw this.fail(`${section}.${key}`, `must be a non-empty string, got ${describe(value)}`);
    }
    return value.trim();
  }

  /** A positive number (integers when `integer`), e.g. cpus = 2 or timeout_sec = 120.0. */
  positive(section: string, key: string, opts: { integer?: boolean } = {}): number | undefined {
    const value = this.#get(section, key);
    if (value === undefined) return undefined;
    const ok = typeof value === 'number' && Number.isFinite(value) && value > 0 && (!opts.integer || Number.isInteger(value));
    if (!ok) {
      throw this.fail(`${section}.${key}`, `must be a positive ${opts.integer ? 'integer' : 'number'}, got ${describe(value)}`);
    }
    return value;
  }

  /** An integer >= 0, e.g. gpus = 0. */
  count(section: string, key: string): number | undefined {
    const value = this.#get(section, key);
    if (value === undefined) return undefined;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
      throw this.fail(`${section}.${key}`, `must be a whole number >= 0, got ${describe(value)}`);
    }
    return value;
  }

  boolean(section: string, key: string): boolean | undefined {
    const value = this.#get(section, key);
    if (value === undefined) return undefined;
    if (typeof value !== 'boolean') throw this.fail(`${section}.${key}`, `must be true or false, got ${describe(value)}`);
    return value;
  }

  raw(section: string, key: string): unknown {
    return this.#get(section, key);
  }
}
