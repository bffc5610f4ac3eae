import { z } from 'zod';
import { ImageInputSchema, type ImageSource } from './image-input.js';

/**
 * A sandbox's services (spec.services): containers beside the sandbox (the agent's container), as
 * a docker-compose file's other services are beside `main`: a database, a web service, a mock API.
 * The sandbox reaches each by its name (and its aliases); `env.start()` resolves once every service
 * is up as `docker compose up --wait` would have it (running; healthy where it has a healthcheck;
 * exited 0 where it is a one-shot that others wait for with 'completed'); they go with the sandbox.
 */

/** A service's name: what the sandbox reaches it by. A DNS label, so every engine can name a container after it. */
export const SERVICE_NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const serviceName = z
  .string()
  .regex(SERVICE_NAME, 'a service name is a DNS label: lowercase letters, digits and "-", at most 63, starting and ending with a letter or digit')
  .refine((n) => n !== 'main', {
    message: "\"main\" is the sandbox itself (harbor's and compose's name for the agent's container); name the service otherwise",
  });

const ms = z.number().int().positive();

/**
 * A volume of the sandbox's own, shared between it and its services (compose's named volumes):
 * made empty with the sandbox, removed with it; every mount of one name sees the same files.
 */
export const VolumeMountSchema = z.strictObject({
  type: z.literal('volume'),
  name: z.string().regex(SERVICE_NAME, 'a volume name is a DNS label: lowercase letters, digits and "-", at most 63'),
  target: z
    .string()
    .min(1)
    .refine((p) => p.startsWith('/'), { message: 'must be an absolute path inside the sandbox (start with /)' }),
  readOnly: z.boolean().default(false),
});
export type VolumeMount = z.output<typeof VolumeMountSchema>;

/** compose's healthcheck, in milliseconds; its defaults are compose's (interval 30 s, timeout 30 s, 3 retries, start interval 5 s). */
export const ServiceHealthcheckSchema = z.strictObject({
  /** An argv run in the service's container (compose's CMD-SHELL is ['sh', '-c', '...']); exit 0 is healthy. */
  command: z.array(z.string()).min(1, 'the healthcheck command is an argv of at least one word'),
  intervalMs: ms.default(30_000),
  timeoutMs: ms.default(30_000),
  /** Failures in a row, after the start period, before the service is called unhealthy. */
  retries: z.number().int().min(1).default(3),
  /** Failures in this first stretch do not count. */
  startPeriodMs: z.number().int().min(0).default(0),
  /** The probe's interval during the start period. */
  startIntervalMs: ms.default(5_000),
});
export type ServiceHealthcheck = z.output<typeof ServiceHealthcheckSchema>;

/** What a service waits for of another before it starts: compose's service_started, service_healthy, service_completed_successfully. */
export const ServiceConditionSchema = z.enum(['started', 'healthy', 'completed']);
export type ServiceCondition = z.output<typeof ServiceConditionSchema>;

const port = z.number().int().min(1).max(65535);
const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'environment variable names are [A-Za-z_][A-Za-z0-9_]*');

export const ServiceSchema = z.strictObject({
  /** Pulled (with `auth`, as the sandbox's own image) or built from a Dockerfile. */
  image: ImageInputSchema,
  /** Replaces the image's CMD (compose's `command`). */
  command: z.array(z.string()).optional(),
  /** Replaces the image's ENTRYPOINT (compose's `entrypoint`; [] clears it). */
  entrypoint: z.array(z.string()).optional(),
  env: z.record(envName, z.string()).default({}),
  workdir: z.string().startsWith('/', 'workdir must be an absolute path (start with /)').optional(),
  /** The user its process runs as (a name or uid, optionally ':group'). */
  user: z.string().min(1).optional(),
  /** Ports it listens on (compose's `expose`): engines that put services in one network namespace refuse two on one port. */
  ports: z.array(port).default([]),
  /** Other names the sandbox reaches it by (compose's network aliases). */
  aliases: z.array(serviceName).default([]),
  healthcheck: ServiceHealthcheckSchema.optional(),
  /** Volumes it shares with the sandbox and the other services (spec.mounts' `{ type: 'volume' }`). */
  mounts: z.array(VolumeMountSchema).default([]),
  /** Services this one starts after, and what it waits for of each. */
  dependsOn: z.record(serviceName, ServiceConditionSchema).default({}),
  resources: z
    .strictObject({
      cpus: z.number().positive().max(1024).optional(),
      memoryMb: z.number().int().positive().optional(),
    })
    .default({}),
});

export const ServicesSchema = z.record(serviceName, ServiceSchema);

/** A validated service: its image as the sandbox's is held ({ ref, auth? } or { build }). */
export type Service = Omit<z.output<typeof ServiceSchema>, 'image'> & { image: ImageSource };
export type ServiceInput = z.input<typeof ServiceSchema>;

/**
 * What is wrong with a set of services as a whole, by path, else undefined: a dependency on a
 * service that is not there, a cycle, a name or alias given twice, 'completed' on a service that
 * has a healthcheck to wait for instead, 'healthy' on one without a healthcheck.
 */
export function servicesProblem(
  services: Readonly<Record<string, z.output<typeof ServiceSchema>>>,
  sandboxDependsOn: Readonly<Record<string, ServiceCondition>> = {},
): { path: string; message: string } | undefined {
  for (const [dep, condition] of Object.entries(sandboxDependsOn)) {
    const at = `spec.dependsOn.${dep}`;
    if (!(dep in services)) return { path: at, message: `${at}: there is no service "${dep}" in spec.services` };
    if (condition === 'healthy' && !services[dep]!.healthcheck)
      return { path: at, message: `${at} is 'healthy', but ${dep} has no healthcheck to pass: give it one, or wait for 'started'` };
  }
  const names = new Map<string, string>();
  for (const [name, service] of Object.entries(services)) {
    for (const alias of [name, ...service.aliases]) {
      const holder = names.get(alias);
      if (holder !== undefined && (holder !== name || alias !== name))
        return {
          path: `spec.services.${name}.aliases`,
          message: `spec.services.${name}: the name "${alias}" is also ${holder === name ? 'its own name' : `service ${holder}'s`}: each name reaches one service`,
        };
      names.set(alias, name);
    }
  }
  for (const [name, service] of Object.entries(services)) {
    for (const [dep, condition] of Object.entries(service.dependsOn)) {
      const at = `spec.services.${name}.dependsOn.${dep}`;
      if (!(dep in services)) return { path: at, message: `${at}: there is no service "${dep}" (the services are ${Object.keys(services).join(', ')})` };
      if (dep === name) return { path: at, message: `${at}: a service cannot wait for itself` };
      if (condition === 'healthy' && !services[dep]!.healthcheck)
        return { path: at, message: `${at} is 'healthy', but ${dep} has no healthcheck to pass: give it one, or wait for 'started'` };
    }
  }
  const cycle = findCycle(services);
  if (cycle)
    return {
      path: `spec.services.${cycle[0]}.dependsOn`,
      message: `spec.services: the services wait for each other in a circle (${cycle.join(' -> ')}): none could start`,
    };
  return undefined;
}

function findCycle(services: Readonly<Record<string, { dependsOn: Record<string, unknown> }>>): string[] | undefined {
  const state = new Map<string, 'visiting' | 'done'>();
  const path: string[] = [];
  const visit = (name: string): string[] | undefined => {
    if (state.get(name) === 'done') return undefined;
    if (state.get(name) === 'visiting') return [...path.slice(path.indexOf(name)), name];
    state.set(name, 'visiting');
    path.push(name);
    for (const dep of Object.keys(services[name]?.dependsOn ?? {})) {
      const found = visit(dep);
      if (found) return found;
    }
    path.pop();
    state.set(name, 'done');
    return undefined;
  };
  for (const name of Object.keys(services)) {
    const found = visit(name);
    if (found) return found;
  }
  return undefined;
}

/** The services another one, or the sandbox (spec.dependsOn), waits for with 'completed' (one-shots): they run to exit 0 rather than on. */
export function oneShots(
  services: Readonly<Record<string, { dependsOn: Record<string, ServiceCondition> }>>,
  sandboxDependsOn: Readonly<Record<string, ServiceCondition>> = {},
): Set<string> {
  const waits = [...Object.values(services).map((s) => s.dependsOn), sandboxDependsOn];
  return new Set(waits.flatMap((d) => Object.entries(d).flatMap(([dep, c]) => (c === 'completed' ? [dep] : []))));
}
