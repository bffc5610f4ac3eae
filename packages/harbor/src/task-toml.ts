import { ConfigError } from '@berth/core';
import { z } from 'zod';

// task.toml is input from outside: its schema is checked here, and a wrong field is a ConfigError
// that names the file and the field and says what it should be. Unknown sections and fields are
// allowed on purpose: harbor's task.toml carries many (metadata, version, env tables...) that a
// runner does not need, and refusing them would refuse real tasks.

function shown(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (value instanceof Date) return `a date (${value.toISOString()})`;
  if (Array.isArray(value)) return 'an array';
  if (value !== null && typeof value === 'object') return 'a table';
  return String(value);
}

const positive = (integer = false) =>
  z.unknown().transform((value, ctx) => {
    const ok = typeof value === 'number' && Number.isFinite(value) && value > 0 && (!integer || Number.isInteger(value));
    if (!ok) ctx.addIssue({ code: 'custom', message: `must be a positive ${integer ? 'integer' : 'number'}, got ${shown(value)}` });
    return value as number;
  });

const count = z.unknown().transform((value, ctx) => {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) ctx.addIssue({ code: 'custom', message: `must be a whole number >= 0, got ${shown(value)}` });
  return value as number;
});

const flag = z.unknown().transform((value, ctx) => {
  if (typeof value !== 'boolean') ctx.addIssue({ code: 'custom', message: `must be true or false, got ${shown(value)}` });
  return value as boolean;
});

const text = (missing?: string) =>
  z.unknown().transform((value, ctx) => {
    if (value === undefined && missing) ctx.addIssue({ code: 'custom', message: missing });
    else if (typeof value !== 'string' || value.trim() === '') ctx.addIssue({ code: 'custom', message: `must be a non-empty string, got ${shown(value)}` });
    return typeof value === 'string' ? value.trim() : '';
  });

/** A [section]: absent means empty; anything but a table is refused. */
const section = <S extends z.ZodRawShape>(shape: S) =>
  z.preprocess(
    (value) => (value === undefined ? {} : value),
    z.looseObject(shape, { error: (issue) => `must be a table, got ${shown(issue.input)}` }),
  );

export const TaskTomlSchema = z.looseObject({
  environment: section({
    docker_image: text('is missing: berth runs prebuilt images and does not build environment/Dockerfile; build and push it, then name it here'),
    cpus: positive().optional(),
    memory_mb: positive(true).optional(),
    memory: z.unknown().optional(),
    storage_mb: positive(true).optional(),
    storage: z.unknown().optional(),
    gpus: count.optional(),
    allow_internet: flag.optional(),
  }),
  agent: section({ timeout_sec: positive().optional() }),
  verifier: section({ timeout_sec: positive().optional() }),
});
export type TaskToml = z.output<typeof TaskTomlSchema>;

/** The field path as people write it: `environment.cpus`, or `[agent]` for a whole section. */
function fieldPath(path: readonly PropertyKey[]): string {
  if (path.length === 1) return `[${String(path[0])}]`;
  return path.map(String).join('.');
}

export function fieldError(file: string, field: string, message: string, cause?: unknown): ConfigError {
  return new ConfigError({ operation: 'config', path: field, message: `${file}: ${field} ${message}`, ...(cause === undefined ? {} : { cause }) });
}

/** Validate a parsed task.toml; the first problem becomes a ConfigError naming file and field. */
export function parseTaskToml(file: string, root: unknown): TaskToml {
  const result = TaskTomlSchema.safeParse(root);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  throw fieldError(file, fieldPath(issue.path), issue.message, result.error);
}
