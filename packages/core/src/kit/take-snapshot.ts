import { cancelledFrom, throwIfAborted } from '../abort.js';
import type { Snapshot } from '../contract.js';
import { BerthError, CapabilityError, hintRemedy, hintText, type Hint, type Operation } from '../errors.js';
import type { SandboxTransport } from './transport.js';

export interface TakeSnapshot {
  transport: SandboxTransport;
  /** The backend claims the snapshot capability. */
  claimed: boolean;
  /** What the backend says instead when it does not. */
  hint?: Hint;
  ctx: { operation: Operation; backend: string; environmentId: string };
  labels: Readonly<Record<string, string>>;
  signal?: AbortSignal;
  /** The environment's own mapping of a failed call (a sandbox found gone is asked how it ended). */
  mapError: (error: unknown) => Promise<unknown>;
}

/**
 * Environment.snapshot for every backend: refused by name where the backend cannot, the
 * transport's image otherwise, with a remove() that is idempotent and retried after a failure.
 */
export async function takeSnapshot(t: TakeSnapshot): Promise<Snapshot> {
  const { ctx, transport } = t;
  if (!t.claimed || !transport.snapshot) {
    throw new CapabilityError({
      ...ctx,
      capability: 'snapshot',
      ...hintRemedy(t.hint),
      message: `the ${ctx.backend} backend cannot save a sandbox's filesystem as an image (env.snapshot())${t.hint ? `: ${hintText(t.hint)}` : ''}`,
    });
  }
  throwIfAborted(t.signal, ctx);
  let image;
  try {
    image = await transport.snapshot({ labels: t.labels, ...(t.signal ? { signal: t.signal } : {}) });
  } catch (error) {
    if (t.signal?.aborted) throw cancelledFrom(t.signal, ctx);
    throw await t.mapError(error);
  }
  let removal: Promise<void> | undefined;
  return {
    ref: image.ref,
    backend: ctx.backend,
    sourceId: ctx.environmentId,
    createdAt: new Date(),
    remove: () => {
      removal ??= image.remove().catch((error: unknown) => {
        removal = undefined;
        throw BerthError.isInstance(error) ? error : (transport.mapError(error, 'snapshot') ?? error);
      });
      return removal;
    },
  };
}
