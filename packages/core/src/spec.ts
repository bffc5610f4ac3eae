import { z } from 'zod';
import { ConfigError } from './errors.js';

/** Credentials for pulling an image. Exactly one form. */
export const ImageAuthSchema = z.union([
  z.strictObject({ username: z.string().min(1), password: z.string().min(1) }),
  z.strictObject({ identityToken: z.string().min(1) }),
  z.strictObject({
    aws: z.strictObject({
      region: z.string().min(1).optional(),
      accessKeyId: z.string().min(1).optional(),
      secretAccessKey: z.string().min(1).optional(),
      sessionToken: z.string().min(1).optional(),
      profile: z.string().min(1).optional(),
    }),
  }),
  /** A backend-native secret by name: a Kubernetes imagePullSecret, a Modal secret, a Docker backend `registrySecrets` entry. */
  z.strictObject({ secretName: z.string().min(1) }),
]);
export type ImageAuth = z.infer<typeof ImageAuthSchema>;

export const ImageInputSchema = z.union([
  z.string().min(1, 'image reference is empty'),
  z.strictObject({ ref: z.string().min(1, 'image reference is empty'), auth: ImageAuthSchema.optional() }),
]);
export type ImageInput = z.infer<typeof ImageInputSchema>;

const absolutePath = z
  .string()
  .min(1)
  .refine((p) => p.startsWith('/'), { message: 'must be an absolute path inside the sandbox (start with /)' });

export const ResourcesSchema = z.strictObject({
  cpus: z.number().positive().max(1024).optional(),
  memoryMb: z.number().int().positive().optional(),
  storageMb: z.number().int().positive().optional(),
  gpus: z.number().int().min(0).optional(),
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
    image: ImageInputSchema,
    subpath: z.string().optional(),
    target: absolutePath,
  }),
  /** A host directory (Docker) or host path (Kubernetes). */
  z.strictObject({
    type: z.literal('bind'),
    source: absolutePath,
    target: absolutePath,
    readOnly: z.boolean().default(true),
  }),
]);
export type Mount = z.infer<typeof MountSchema>;

const labelKey = z
  .string()
  .regex(/^[A-Za-z0-9]([A-Za-z0-9._/-]{0,251}[A-Za-z0-9])?$/, 'label keys are letters, digits, ".", "_", "-", "/"');

export const EnvironmentSpecSchema = z.strictObject({
  image: ImageInputSchema,
  resources: ResourcesSchema.default({}),
  /** 'none' (the default) gives the sandbox no network at all; 'public' the backend's default network. */
  network: z.enum(['public', 'none']).default('none'),
  env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'environment variable names are [A-Za-z_][A-Za-z0-9_]*'), z.string()).default({}),
  workdir: absolutePath.optional(),
  timeouts: TimeoutsSchema.default({}),
  labels: z.record(labelKey, z.string().max(63)).default({}),
  mounts: z.array(MountSchema).default([]),
});

/** What callers pass: defaults may be left out. */
export type EnvironmentSpecInput = z.input<typeof EnvironmentSpecSchema>;

/** A validated spec: defaults filled in, the image always as `{ ref, auth? }`. */
export type EnvironmentSpec = Omit<z.output<typeof EnvironmentSpecSchema>, 'image'> & {
  image: { ref: string; auth?: ImageAuth };
};

export const DEFAULT_STARTUP_MS = 10 * 60_000;

/** Validate a spec; throws ConfigError naming the offending field and what it should be. */
export function parseEnvironmentSpec(input: unknown, context: { backend?: string } = {}): EnvironmentSpec {
  const result = EnvironmentSpecSchema.safeParse(input);
  if (!result.success) {
    const issue = result.error.issues[0];
    const path = issue && issue.path.length > 0 ? `spec.${issue.path.join('.')}` : 'spec';
    const all = result.error.issues
      .map((i) => `${i.path.length ? 'spec.' + i.path.join('.') : 'spec'}: ${i.message}`)
      .join('; ');
    throw new ConfigError({
      message: `invalid environment spec: ${all}`,
      path,
      operation: 'config',
      ...(context.backend ? { backend: context.backend } : {}),
      cause: result.error,
    });
  }
  const { image, ...rest } = result.data;
  const normalised = typeof image === 'string' ? { ref: image } : image;
  return { ...rest, image: normalised } as EnvironmentSpec;
}
