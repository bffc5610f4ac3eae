import { z } from 'zod';
import { ImageAuthSchema, type ImageAuth } from './image-auth.js';
import { ConfigError } from './errors.js';
import { registerSecret } from './redact.js';
import { NetworkAllowlistSchema } from './network-allowlist.js';

export { ImageAuthSchema, type ImageAuth };

export {
  PulledImageInputSchema,
  ImageInputSchema,
  isBuiltImage,
  type PulledImageInput,
  type ImageInput,
  type PulledImage,
  type BuiltImage,
  type ImageSource,
} from './image-input.js';
import { ImageInputSchema, PulledImageInputSchema, type ImageSource } from './image-input.js';
import { ServiceConditionSchema, ServicesSchema, VolumeMountSchema, servicesProblem, type Service } from './services.js';

const absolutePath = z
  .string()
  .min(1)
  .refine((p) => p.startsWith('/'), { message: 'must be an absolute path inside the sandbox (start with /)' });

export const ResourcesSchema = z.strictObject({
  cpus: z.number().positive().max(1024).optional(),
  memoryMb: z.number().int().positive().optional(),
  storageMb: z.number().int().positive().optional(),
  gpus: z.number().int().min(0).optional(),
  /**
   * The GPU models the sandbox may get, any of them (harbor's `gpu_types`), e.g. ['H100', 'A100-80GB'];
   * left out, any GPU. Needs resources.gpus > 0. Repeats are dropped, the order kept (Modal takes the first).
   */
  gpuTypes: z
    .array(
      z
        .string()
        .min(1, 'a GPU type is a name such as "H100"; got an empty string')
        .refine((t) => !/[:,\s]/.test(t), { message: 'a GPU type is one name such as "H100" (the count goes in resources.gpus, one type per entry)' }),
    )
    .min(1, 'lists at least one GPU type; leave it out to take any GPU')
    .transform((types) => [...new Set(types)])
    .optional(),
});
export type Resources = z.infer<typeof ResourcesSchema>;

export const TimeoutsSchema = z.strictObject({
  /** How long start() may take, pull included. Default 10 minutes. */
  startupMs: z.number().int().positive().optional(),
  /** Hard cap on the sandbox's life; the backend removes it after this. */
  lifetimeMs: z.number().int().positive().optional(),
  /** Backends that support it stop a sandbox idle this long. */
  idleMs: z.number().int().positive().optional(),
});

export const MountSchema = z.discriminatedUnion('type', [
  /** An image's filesystem (or a subpath of it) mounted read-only, e.g. an agent runtime. */
  z.strictObject({
    type: z.literal('image'),
    image: PulledImageInputSchema,
    subpath: z.string().optional(),
    target: absolutePath,
  }),
  /** A volume of the sandbox's own, shared with its services (services.ts). */
  VolumeMountSchema,
  /** A host directory (Docker) or host path (Kubernetes). */
  z.strictObject({
    type: z.literal('bind'),
    source: absolutePath,
    target: absolutePath,
    readOnly: z.boolean().default(true),
  }),
]);
export type Mount = z.infer<typeof MountSchema>;

const labelKey = z.string().regex(/^[A-Za-z0-9]([A-Za-z0-9._/-]{0,251}[A-Za-z0-9])?$/, 'label keys are letters, digits, ".", "_", "-", "/"');

/** A sandbox's network: 'public', 'none' or an allowlist (spec.network, Environment.setNetwork). */
export const NetworkSchema = z.union([z.enum(['public', 'none']), NetworkAllowlistSchema]);

/** Whether two networks are the same (allowlists: the same entries, in any order). */
export function sameNetwork(a: z.output<typeof NetworkSchema>, b: z.output<typeof NetworkSchema>): boolean {
  if (typeof a === 'string' || typeof b === 'string') return a === b;
  return a.allow.length === b.allow.length && a.allow.every((entry) => b.allow.includes(entry));
}

export const EnvironmentSpecSchema = z.strictObject({
  image: ImageInputSchema,
  resources: ResourcesSchema.default({}),
  /**
   * 'none' (the default): no packet enters or leaves the sandbox but on loopback (see NetworkMode);
   * 'public': the backend's default network; `{ allow: [...] }`: only to what it lists (see NetworkAllowlist).
   */
  network: NetworkSchema.default('none'),
  /** Allow setNetwork() on the running sandbox (backends with the networkSwitch capability). */
  networkSwitch: z.boolean().default(false),
  env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'environment variable names are [A-Za-z_][A-Za-z0-9_]*'), z.string()).default({}),
  workdir: absolutePath.optional(),
  timeouts: TimeoutsSchema.default({}),
  labels: z.record(labelKey, z.string().max(63)).default({}),
  mounts: z.array(MountSchema).default([]),
  /** Containers beside the sandbox that it reaches by name (see services.ts): a compose file's other services. */
  services: ServicesSchema.default({}),
  /** What the sandbox itself waits for of its services (compose's depends_on on main): a service it waits to complete is a one-shot. */
  dependsOn: z.record(z.string(), ServiceConditionSchema).default({}),
});

/** What callers pass: defaults may be left out. */
export type EnvironmentSpecInput = z.input<typeof EnvironmentSpecSchema>;

/** A validated spec: defaults filled in, the image always as `{ ref, auth? }` or `{ build }`. */
export type EnvironmentSpec = Omit<z.output<typeof EnvironmentSpecSchema>, 'image' | 'mounts' | 'services'> & {
  image: ImageSource;
  mounts: Mount[];
  services: Record<string, Service>;
};

export const DEFAULT_STARTUP_MS = 10 * 60_000;

/**
 * The kernel's limits on a process's environment: one `NAME=value` string may be at most
 * MAX_ARG_STRLEN (32 pages) long, and all of them together share ARG_MAX (a quarter of the stack
 * limit, 2 MiB by default) with the arguments. berth keeps the environment well under that so
 * every backend can start its processes.
 */
export const ENV_ENTRY_MAX_BYTES = 128 * 1024 - 1;
export const ENV_TOTAL_MAX_BYTES = 1024 * 1024;

/** A ConfigError for an environment the kernel would refuse, else undefined. */
export function envSizeProblem(env: Readonly<Record<string, string>>, path: string): { path: string; message: string } | undefined {
  let total = 0;
  for (const [name, value] of Object.entries(env)) {
    const bytes = Buffer.byteLength(name) + 1 + Buffer.byteLength(value) + 1;
    if (bytes > ENV_ENTRY_MAX_BYTES + 1) {
      return {
        path: `${path}.${name}`,
        message: `${path}.${name} is ${bytes} bytes; Linux refuses to start a process with one variable over ${ENV_ENTRY_MAX_BYTES + 1} bytes (MAX_ARG_STRLEN): pass large data as a file (uploadFile) instead`,
      };
    }
    total += bytes;
  }
  if (total > ENV_TOTAL_MAX_BYTES) {
    return {
      path,
      message: `${path} is ${total} bytes in all; berth allows ${ENV_TOTAL_MAX_BYTES} (Linux refuses more than ARG_MAX, 2 MiB by default, for environment and arguments together): pass large data as a file (uploadFile) instead`,
    };
  }
  return undefined;
}

const AUTH_SHAPES =
  '{ username, password }, { identityToken }, { aws: { region?, accessKeyId?, secretAccessKey?, sessionToken?, profile? } } or { secretName }';
const typeName = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v);

/** What to say of an issue the schema's own words would leave vague, and where it is. */
const NETWORK_SHAPES = "'none', 'public' or { allow: [...] } (hostnames, *.domain wildcards, IPv4 addresses, IPv4 CIDR ranges)";

/** spec.network's problems: an allowlist entry by its index and what is wrong with it, else the shapes it takes. */
function networkIssue(issue: z.core.$ZodIssue, input: unknown): { path: string; message: string } {
  const entry = issue.code === 'invalid_union' ? issue.errors.flat().find((i) => i.code === 'custom') : issue.code === 'custom' ? issue : undefined;
  if (entry) {
    const index = entry.path[entry.path.length - 1];
    return { path: `spec.network.allow[${String(index)}]`, message: `spec.${entry.message}` };
  }
  const network = input !== null && typeof input === 'object' ? (input as Record<string, unknown>).network : undefined;
  const got =
    typeof network === 'string'
      ? `'${network}'`
      : network !== null && typeof network === 'object'
        ? `keys ${Object.keys(network).join(', ') || '(none)'}`
        : typeName(network);
  return { path: 'spec.network', message: `spec.network is ${NETWORK_SHAPES}; got ${got}` };
}

function describeIssue(issue: z.core.$ZodIssue, input: unknown): { path: string; message: string } {
  const at = issue.path.length ? `spec.${issue.path.join('.')}` : 'spec';
  const image = input !== null && typeof input === 'object' ? (input as Record<string, unknown>).image : undefined;
  if (issue.path[0] === 'image' && issue.path[1] === 'build') return { path: at, message: `${at} ${issue.message}` };
  if (issue.path[0] === 'network') return networkIssue(issue, input);
  // A record's key (a service's name, an env name) refused: the key's own rule says why.
  if (issue.code === 'invalid_key') return { path: at, message: `${at}: ${issue.issues[0]?.message ?? issue.message}` };
  if (issue.path.join('.') !== 'image') return { path: at, message: `${at}: ${issue.message}` };
  if (image === undefined) {
    return {
      path: at,
      message: `${at} is required: the image to run, e.g. image: 'python:3.12-slim', { ref: 'ghcr.io/org/app:1', auth: {...} } or { build: { context: '/abs/dir' } }`,
    };
  }
  if (image === null || typeof image !== 'object' || Array.isArray(image)) {
    return { path: at, message: `${at} must be an image reference string such as 'python:3.12-slim', { ref, auth? } or { build }; got ${typeName(image)}` };
  }
  const { ref, auth, build, ...unknown } = image as Record<string, unknown>;
  if (build !== undefined) {
    const extra = Object.keys(image as object).filter((k) => k !== 'build');
    if (extra.length > 0)
      return { path: at, message: `${at} has ${extra.join(', ')} beside build: an image is either pulled ({ ref, auth? }) or built ({ build })` };
    return { path: `${at}.build`, message: `${at}.build must be { context, dockerfile?, args?, target?, timeoutMs?, network? }; got ${typeName(build)}` };
  }
  if (Object.keys(unknown).length > 0) {
    return { path: at, message: `${at} has unknown key(s) ${Object.keys(unknown).join(', ')}: it is { ref, auth? } or { build }` };
  }
  if (typeof ref !== 'string' || ref === '')
    return { path: `${at}.ref`, message: `${at}.ref must be an image reference string such as 'python:3.12-slim'; got ${typeName(ref)}` };
  const keys = auth !== null && typeof auth === 'object' ? Object.keys(auth) : [];
  return { path: `${at}.auth`, message: `${at}.auth must be one of ${AUTH_SHAPES}; got ${keys.length ? `keys ${keys.join(', ')}` : typeName(auth)}` };
}

/**
 * Secret fields of registry auth, kept out of anything that prints (util.inspect, JSON.stringify,
 * spreads into events): they stay readable by property for the backend that pulls with them, and
 * are registered for redaction wherever they might appear in text.
 */
function hideSecrets(auth: ImageAuth): ImageAuth {
  const hide = (holder: object, field: string) => {
    const value = (holder as Record<string, unknown>)[field];
    if (typeof value !== 'string') return;
    registerSecret(value);
    Object.defineProperty(holder, field, { value, enumerable: false, writable: false, configurable: false });
  };
  if ('password' in auth) hide(auth, 'password');
  if ('identityToken' in auth) hide(auth, 'identityToken');
  if ('aws' in auth) {
    hide(auth.aws, 'secretAccessKey');
    hide(auth.aws, 'sessionToken');
  }
  return auth;
}

/** Validate a spec; throws ConfigError naming the offending field and what it should be. */
export function parseEnvironmentSpec(input: unknown, context: { backend?: string } = {}): EnvironmentSpec {
  const fail = (path: string, message: string, cause?: unknown) =>
    new ConfigError({
      message: `invalid environment spec: ${message}`,
      path,
      operation: 'config',
      ...(context.backend ? { backend: context.backend } : {}),
      cause,
    });
  const result = EnvironmentSpecSchema.safeParse(input);
  if (!result.success) {
    const issues = result.error.issues.map((i) => describeIssue(i, input));
    // zod's words and ours name fields and types, never values: no secret can ride along.
    throw fail(issues[0]?.path ?? 'spec', issues.map((i) => i.message).join('; '), result.error);
  }
  const { image, services, ...rest } = result.data;
  const normalised: ImageSource = typeof image === 'string' ? { ref: image } : image;
  if ('auth' in normalised && normalised.auth) hideSecrets(normalised.auth);
  const servicesWrong = servicesProblem(services, rest.dependsOn);
  if (servicesWrong) throw fail(servicesWrong.path, servicesWrong.message);
  const normalisedServices: Record<string, Service> = {};
  for (const [name, service] of Object.entries(services)) {
    const own: ImageSource = typeof service.image === 'string' ? { ref: service.image } : service.image;
    if ('auth' in own && own.auth) hideSecrets(own.auth);
    const problem = envSizeProblem(service.env, `spec.services.${name}.env`);
    if (problem) throw fail(problem.path, problem.message);
    normalisedServices[name] = { ...service, image: own };
  }
  const envProblem = envSizeProblem(rest.env, 'spec.env');
  if (envProblem) throw fail(envProblem.path, envProblem.message);
  const { gpus, gpuTypes } = rest.resources;
  if (gpuTypes !== undefined && !((gpus ?? 0) > 0)) {
    throw fail(
      'spec.resources.gpuTypes',
      `spec.resources.gpuTypes (${gpuTypes.join(', ')}) says which GPUs, but resources.gpus asks for none: set resources.gpus to how many GPUs the sandbox needs, or leave gpuTypes out`,
    );
  }
  return { ...rest, image: normalised, services: normalisedServices } as EnvironmentSpec;
}
