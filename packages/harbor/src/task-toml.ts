import { ConfigError } from '@berth/core';
import { z } from 'zod';

// task.toml is input from outside: its schema (harbor 0.26's TaskConfig) is checked here, and a
// wrong field is a ConfigError that names the file and the field and says what it should be.
// Fields harbor does not know are not errors (harbor ignores them too); unknownFields() lists
// them so that the trial records each one as a note.

function shown(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (value instanceof Date) return `a date (${value.toISOString()})`;
  if (Array.isArray(value)) return 'an array';
  if (value !== null && typeof value === 'object') return 'a table';
  return String(value);
}

const check = <T>(ok: (value: unknown) => boolean, what: string) =>
  z.unknown().transform((value, ctx) => {
    if (!ok(value)) ctx.addIssue({ code: 'custom', message: `must be ${what}, got ${shown(value)}` });
    return value as T;
  });

const positive = (integer = false) =>
  check<number>(
    (v) => typeof v === 'number' && Number.isFinite(v) && v > 0 && (!integer || Number.isInteger(v)),
    `a positive ${integer ? 'integer' : 'number'}`,
  );
const count = check<number>((v) => typeof v === 'number' && Number.isInteger(v) && v >= 0, 'a whole number >= 0');
const flag = check<boolean>((v) => typeof v === 'boolean', 'true or false');
const text = check<string>((v) => typeof v === 'string' && v.trim() !== '', 'a non-empty string');
const texts = check<string[]>((v) => Array.isArray(v) && v.every((s) => typeof s === 'string'), 'an array of strings');
/** A user name or uid: harbor takes either. */
const user = check<string | number>(
  (v) => (typeof v === 'string' && v.trim() !== '') || (typeof v === 'number' && Number.isInteger(v) && v >= 0),
  'a user name or a uid',
);
const absolute = check<string>((v) => typeof v === 'string' && v.startsWith('/'), 'an absolute path in the sandbox');
/** An env table: names to string values (harbor's dict[str, str]; numbers are not converted). */
const envTable = check<Record<string, string>>(
  (v) => v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Date) && Object.values(v).every((s) => typeof s === 'string'),
  'a table of strings, e.g. NAME = "value" or NAME = "${HOST_VAR:-default}"',
);
const networkMode = check<'public' | 'no-network' | 'allowlist'>(
  (v) => v === 'public' || v === 'no-network' || v === 'allowlist',
  '"public", "no-network" or "allowlist"',
);
const tables = check<Array<Record<string, unknown>>>(
  (v) => Array.isArray(v) && v.every((t) => t !== null && typeof t === 'object' && !Array.isArray(t)),
  'an array of tables',
);

/** A [section]: absent means empty; anything but a table is refused. */
const section = <S extends z.ZodRawShape>(shape: S) =>
  z.preprocess((value) => (value === undefined ? {} : value), z.looseObject(shape, { error: (issue) => `must be a table, got ${shown(issue.input)}` }));
const optionalSection = <S extends z.ZodRawShape>(shape: S) =>
  z.looseObject(shape, { error: (issue) => `must be a table, got ${shown(issue.input)}` }).optional();

const phaseNetwork = { network_mode: networkMode.optional(), allowed_hosts: texts.optional() };

const healthcheckShape = {
  command: text,
  interval_sec: positive().optional(),
  timeout_sec: positive().optional(),
  start_period_sec: check<number>((v) => typeof v === 'number' && v >= 0, 'a number >= 0').optional(),
  start_interval_sec: positive().optional(),
  retries: count.optional(),
};

const environmentShape = {
  docker_image: text.optional(),
  build_timeout_sec: positive().optional(),
  os: check<string>((v) => typeof v === 'string' && /^(linux|windows)$/i.test(v), '"linux" or "windows"').optional(),
  cpus: positive().optional(),
  memory_mb: positive(true).optional(),
  memory: z.unknown().optional(),
  storage_mb: positive(true).optional(),
  storage: z.unknown().optional(),
  gpus: count.optional(),
  gpu_types: texts.optional(),
  tpu: z.unknown().optional(),
  allow_internet: flag.optional(),
  ...phaseNetwork,
  env: envTable.optional(),
  mcp_servers: tables.optional(),
  skills_dir: text.optional(),
  healthcheck: optionalSection(healthcheckShape),
  workdir: absolute.optional(),
};

/** `[environment]`, and `[verifier.environment]` (the same schema, for a separate verifier). */
export const EnvironmentTableSchema = section(environmentShape);
export type EnvironmentTable = z.output<typeof EnvironmentTableSchema>;

const artifact = check<string | { source: string; destination?: string; exclude?: string[]; service?: string }>(
  (v) =>
    (typeof v === 'string' && v !== '') ||
    (v !== null && typeof v === 'object' && typeof (v as { source?: unknown }).source === 'string' && (v as { source: string }).source !== ''),
  'a path or a table { source, destination?, exclude?, service? }',
);

/** One `[[verifier.collect]]` entry (harbor's VerifierCollectConfig). */
const collectEntryShape = {
  command: text,
  service: text.optional(),
  timeout_sec: positive().optional(),
  user: user.optional(),
};
const collectEntry = z.looseObject(collectEntryShape, {
  error: (issue) => `must be a table { command, timeout_sec?, user?, service? }, got ${shown(issue.input)}`,
});

const artifactList = z.array(artifact, { error: (issue) => `must be an array, got ${shown(issue.input)}` });
const agentShape = { timeout_sec: positive().optional(), user: user.optional(), ...phaseNetwork };
const verifierShape = {
  timeout_sec: positive().optional(),
  env: envTable.optional(),
  user: user.optional(),
  ...phaseNetwork,
  environment_mode: check<'shared' | 'separate'>((v) => v === 'shared' || v === 'separate', '"shared" or "separate"').optional(),
  environment: z.unknown().optional(),
  collect: z.array(collectEntry, { error: (issue) => `must be an array of tables ([[verifier.collect]]), got ${shown(issue.input)}` }).optional(),
};
/** `min_reward`: a number (gates on "reward") or a table of numbers (gates on each key), as harbor's StepConfig. */
const minReward = check<number | Record<string, number>>(
  (v) =>
    (typeof v === 'number' && Number.isFinite(v)) ||
    (v !== null &&
      typeof v === 'object' &&
      !Array.isArray(v) &&
      !(v instanceof Date) &&
      Object.values(v).every((n) => typeof n === 'number' && Number.isFinite(n))),
  'a number or a table of numbers, e.g. 1.0 or { correctness = 0.8 }',
);
/** One `[[steps]]` entry (harbor's StepConfig). */
const stepShape = {
  name: text,
  agent: section(agentShape),
  verifier: section(verifierShape),
  min_reward: minReward.optional(),
  healthcheck: optionalSection(healthcheckShape),
  artifacts: artifactList.optional(),
};
const stepEntry = z.looseObject(stepShape, {
  error: (issue) => `must be a table ([[steps]] with name, agent, verifier, min_reward, healthcheck, artifacts), got ${shown(issue.input)}`,
});

export const TaskTomlSchema = z.looseObject({
  schema_version: z.unknown().optional(),
  version: z.unknown().optional(),
  source: z.unknown().optional(),
  multi_step_reward_strategy: check<'mean' | 'final'>((v) => v === 'mean' || v === 'final', '"mean" or "final"').optional(),
  artifacts: artifactList.optional(),
  steps: z.array(stepEntry, { error: (issue) => `must be an array of tables ([[steps]]), got ${shown(issue.input)}` }).optional(),
  task: optionalSection({ name: text.optional() }),
  metadata: z.unknown().optional(),
  environment: EnvironmentTableSchema,
  agent: section(agentShape),
  verifier: section(verifierShape),
  solution: section({ env: envTable.optional() }),
});
export type TaskToml = z.output<typeof TaskTomlSchema>;
export type StepToml = NonNullable<TaskToml['steps']>[number];

/** Every field harbor's schema has, by table; `*` marks free-form tables. */
const KNOWN: Record<string, readonly string[] | '*'> = {
  '': [
    'schema_version',
    'version',
    'source',
    'multi_step_reward_strategy',
    'artifacts',
    'steps',
    'task',
    'metadata',
    'environment',
    'agent',
    'verifier',
    'solution',
  ],
  task: ['name', 'version', 'description', 'authors', 'keywords'],
  metadata: '*',
  environment: Object.keys(environmentShape).concat(['allow_internet']),
  'environment.env': '*',
  'environment.healthcheck': ['command', 'interval_sec', 'timeout_sec', 'start_period_sec', 'start_interval_sec', 'retries'],
  'environment.tpu': '*',
  agent: ['timeout_sec', 'user', 'network_mode', 'allowed_hosts'],
  verifier: ['timeout_sec', 'env', 'user', 'network_mode', 'allowed_hosts', 'environment_mode', 'environment', 'collect'],
  // Each [[verifier.collect]] entry's fields (an array: its unknown keys are listed by collectCommandsOf).
  'verifier.collect': Object.keys(collectEntryShape),
  'verifier.env': '*',
  'verifier.environment': Object.keys(environmentShape).concat(['allow_internet']),
  'verifier.environment.env': '*',
  'verifier.environment.healthcheck': ['command', 'interval_sec', 'timeout_sec', 'start_period_sec', 'start_interval_sec', 'retries'],
  solution: ['env'],
  'solution.env': '*',
  // Each [[steps]] entry's fields (an array: its unknown keys are listed by stepsOf, as steps[i].<key>).
  steps: Object.keys(stepShape),
  'steps.agent': Object.keys(agentShape),
  'steps.verifier': Object.keys(verifierShape),
  'steps.verifier.env': '*',
  'steps.verifier.environment': '*',
  'steps.healthcheck': Object.keys(healthcheckShape),
};

/** Fields outside harbor's schema (`environment.memory_gb`, `[scoring]`...), as dotted paths. */
/** Edit distance, small strings only: enough to tell `verifer` from `verifier`. */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row.push(Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1)));
    prev = row;
  }
  return prev[b.length]!;
}

/** The known field an unknown one is probably a typo of (`verifer` → `verifier`), if any. */
export function likelyMeant(path: string): string | undefined {
  const dot = path.lastIndexOf('.');
  const at = dot === -1 ? '' : path.slice(0, dot);
  const key = path.slice(dot + 1);
  const known = KNOWN[at];
  if (!Array.isArray(known)) return undefined;
  const best = known.map((k) => [k, distance(key.toLowerCase(), k)] as const).sort((x, y) => x[1] - y[1])[0];
  return best && best[1] > 0 && best[1] <= Math.max(1, Math.floor(key.length / 4)) ? (at ? `${at}.${best[0]}` : best[0]) : undefined;
}

export function unknownFields(root: Record<string, unknown>, from = ''): string[] {
  const out: string[] = [];
  const walk = (table: Record<string, unknown>, at: string) => {
    const known = KNOWN[at];
    if (known === '*') return;
    for (const [key, value] of Object.entries(table)) {
      const path = at ? `${at}.${key}` : key;
      if (!known?.includes(key)) out.push(path);
      else if (value !== null && typeof value === 'object' && !Array.isArray(value) && !(value instanceof Date) && path in KNOWN)
        walk(value as Record<string, unknown>, path);
    }
  };
  walk(root, from);
  return out;
}

/** The field path as people write it: `environment.cpus`, `verifier.collect[0].command`, or `[agent]` for a whole section. */
function fieldPath(path: readonly PropertyKey[]): string {
  if (path.length === 1) return `[${String(path[0])}]`;
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`)).join('');
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

/** Validate `[verifier.environment]` (absent: empty); errors name `verifier.environment.<field>`. */
export function parseVerifierEnvironment(file: string, value: unknown): EnvironmentTable {
  const result = EnvironmentTableSchema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  throw fieldError(file, ['verifier', 'environment', ...issue.path].map(String).join('.'), issue.message, result.error);
}
