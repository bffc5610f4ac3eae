import { isAbsolute, normalize } from 'node:path';
import { z } from 'zod';
import type { ImageAuth } from './image-auth.js';

/** A line of an image build's log; `step` is the Dockerfile step it belongs to, when known. */
export interface BuildProgress {
  context: string;
  line: string;
  step?: string;
}

/** How long a build may take when `timeoutMs` is not given: harbor's build_timeout_sec default. */
export const DEFAULT_BUILD_TIMEOUT_MS = 10 * 60_000;

/**
 * An image built from a Dockerfile on the caller's machine, instead of one pulled by reference.
 * Backends that can build tag the result by a content hash of everything below (context files,
 * Dockerfile path, args, target), so an unchanged context is built once per machine.
 */
export const ImageBuildSchema = z.strictObject({
  /** The build context: an absolute local directory, sent whole to the builder. */
  context: z
    .string()
    .min(1, 'is empty')
    .refine((p) => isAbsolute(p), { message: 'must be an absolute local directory (resolve it first)' }),
  /** The Dockerfile, relative to the context. Default 'Dockerfile'. */
  dockerfile: z
    .string()
    .min(1, 'is empty')
    .refine((p) => !isAbsolute(p) && !normalize(p).startsWith('..'), { message: 'must be a path inside the context, relative to it' })
    .default('Dockerfile'),
  /** Build arguments (ARG), by name. */
  args: z.record(z.string(), z.string()).default({}),
  /** A stage of a multi-stage Dockerfile to stop at. */
  target: z.string().min(1).optional(),
  /** How long the build may take; default 10 minutes. The startup deadline is extended by it. */
  timeoutMs: z.number().int().positive().optional(),
  /** The network of RUN steps: 'public' (the default: builds install packages) or 'none'. */
  network: z.enum(['public', 'none']).default('public'),
});

export type ImageBuildInput = z.input<typeof ImageBuildSchema>;
export type ImageBuild = z.output<typeof ImageBuildSchema>;

/** What a log line or a report says of an image: its reference, or where it is built from. */
export function describeImage(image: { ref: string } | { build: ImageBuild }): string {
  if ('ref' in image) return image.ref;
  const { context, dockerfile } = image.build;
  return `built from ${dockerfile === 'Dockerfile' ? context : `${context} (${dockerfile})`}`;
}

/**
 * Builds `image: { build }` specs for a backend that cannot build from a local directory itself (a
 * cluster): somewhere the backend can pull from, returning the reference and the credentials to
 * pull it with. `@berth/backend-docker`'s `createRegistryImageBuilder` builds with the local Docker
 * engine and pushes to a registry.
 */
export interface ImageBuilder {
  /** Says what it builds with, for messages. */
  readonly name: string;
  build(request: ImageBuildRequest): Promise<{ ref: string; auth?: ImageAuth }>;
}

export interface ImageBuildRequest {
  build: ImageBuild;
  /** The startup deadline or the caller's abort. */
  signal: AbortSignal;
  /** Build log lines, as the environment's `build` events. */
  onProgress: (progress: BuildProgress) => void;
  /** Called when a build really runs (not when the image was already built). */
  onBuilding?: () => void;
  /** For errors: the backend and environment the build is for. */
  backend: string;
  environmentId?: string;
}
