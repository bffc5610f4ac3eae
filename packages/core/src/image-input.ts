import { z } from 'zod';
import { ImageBuildSchema, type ImageBuild } from './build-spec.js';
import { ImageAuthSchema, type ImageAuth } from './image-auth.js';

// An image as a spec gives it: the sandbox's (spec.image) and each service's.

/** An image pulled by reference: a string, or `{ ref, auth? }`. */
export const PulledImageInputSchema = z.union([
  z.string().min(1, 'image reference is empty'),
  z.strictObject({ ref: z.string().min(1, 'image reference is empty'), auth: ImageAuthSchema.optional() }),
]);
export type PulledImageInput = z.infer<typeof PulledImageInputSchema>;

/** What runs: an image pulled by reference, or `{ build: { context, dockerfile?, ... } }`. */
export const ImageInputSchema = z.union([PulledImageInputSchema, z.strictObject({ build: ImageBuildSchema })]);
export type ImageInput = z.input<typeof ImageInputSchema>;

/** An image as a validated spec holds it. */
export type PulledImage = { ref: string; auth?: ImageAuth };
export type BuiltImage = { build: ImageBuild };
export type ImageSource = PulledImage | BuiltImage;

export function isBuiltImage(image: ImageSource): image is BuiltImage {
  return 'build' in image;
}
