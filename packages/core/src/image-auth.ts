import { z } from 'zod';

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
