import { z } from 'zod';

// The compose keys berth runs (and the inert ones it accepts), as zod schemas: a key outside them,
// or a value of the wrong shape, is refused by its path before any I/O (compose.ts maps the rest).

const scalar = z.union([z.string(), z.number(), z.boolean()]);
const argv = z.union([z.string(), z.array(z.union([z.string(), z.number()]))]).nullable();
const env = z.union([z.array(z.union([z.string(), z.number()])), z.record(z.string(), scalar.nullable())]).nullable();
const duration = z.union([z.string(), z.number()]);
const ports = z.array(z.union([z.string(), z.number(), z.looseObject({ target: z.union([z.string(), z.number()]) })]));
const networks = z.union([z.array(z.string()), z.record(z.string(), z.strictObject({ aliases: z.array(z.string()).optional() }).nullable())]);
const volumes = z.array(
  z.union([z.string(), z.strictObject({ type: z.string().optional(), source: z.string(), target: z.string(), read_only: z.boolean().optional() })]),
);
const dependsOn = z.union([
  z.array(z.string()),
  z.record(z.string(), z.strictObject({ condition: z.string().optional(), restart: z.boolean().optional(), required: z.boolean().optional() }).nullable()),
]);
const build = z.union([
  z.string(),
  z.strictObject({
    context: z.string(),
    dockerfile: z.string().optional(),
    target: z.string().optional(),
    args: z.union([z.array(z.string()), z.record(z.string(), scalar.nullable())]).optional(),
  }),
]);
/** Accepted and without effect: berth names containers itself, pulls by its own policy, restarts nothing (a service that ends is the sandbox's loss). */
export const IGNORED = [
  'restart',
  'hostname',
  'container_name',
  'pull_policy',
  'platform',
  'init',
  'labels',
  'stop_grace_period',
  'stop_signal',
  'tty',
  'stdin_open',
] as const;
const inert = Object.fromEntries(IGNORED.map((k) => [k, z.unknown().optional()]));

export const ComposeServiceSchema = z.strictObject({
  image: z.string().optional(),
  build: build.optional(),
  command: argv.optional(),
  entrypoint: argv.optional(),
  environment: env.optional(),
  healthcheck: z
    .strictObject({
      test: z.union([z.string(), z.array(z.string())]).optional(),
      interval: duration.optional(),
      timeout: duration.optional(),
      start_period: duration.optional(),
      start_interval: duration.optional(),
      retries: z.number().int().min(1).optional(),
      disable: z.boolean().optional(),
    })
    .optional(),
  depends_on: dependsOn.optional(),
  expose: ports.optional(),
  ports: ports.optional(),
  user: z.union([z.string(), z.number()]).optional(),
  working_dir: z.string().optional(),
  networks: networks.optional(),
  volumes: volumes.optional(),
  deploy: z
    .strictObject({ resources: z.strictObject({ limits: z.record(z.string(), scalar).optional(), reservations: z.unknown().optional() }).optional() })
    .optional(),
  cpus: z.union([z.number(), z.string()]).optional(),
  mem_limit: z.union([z.number(), z.string()]).optional(),
  ...inert,
});

/** harbor's main: the sandbox, with the task's image; only what berth can hold for it. */
export const ComposeMainSchema = z.strictObject({
  image: z.string().optional(),
  build: build.optional(),
  command: argv.optional(),
  depends_on: dependsOn.optional(),
  environment: env.optional(),
  networks: networks.optional(),
  volumes: volumes.optional(),
  pull_policy: z.unknown().optional(),
  platform: z.unknown().optional(),
  init: z.unknown().optional(),
  container_name: z.unknown().optional(),
  labels: z.unknown().optional(),
});

export const ComposeFileSchema = z.strictObject({
  services: z.record(z.string(), z.record(z.string(), z.unknown())),
  version: z.unknown().optional(),
  name: z.unknown().optional(),
  networks: z.record(z.string(), z.unknown().nullable()).optional(),
  volumes: z.record(z.string(), z.record(z.string(), z.unknown()).nullable()).optional(),
});

/** `x-` keys are compose's extensions, for anchors: not the file's content. */
export function withoutExtensions(value: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(value).filter(([k]) => !k.startsWith('x-')));
}

/** The first problem zod found, as a path and what to say of it (in compose's words). */
export function composeIssue(error: z.ZodError, prefix: string, unknownKey: string): { path: string; message: string } {
  const issue = error.issues[0]!;
  const at = [prefix, ...issue.path.map(String)].filter(Boolean).join('.');
  if (issue.code === 'unrecognized_keys') return { path: [at, issue.keys[0]].filter(Boolean).join('.'), message: unknownKey };
  if (issue.code === 'invalid_union' || issue.code === 'invalid_type')
    return { path: at, message: `has a value of the wrong shape for compose (${issue.message})` };
  return { path: at, message: issue.message };
}
