import { CreationLimiter, type CreationLimits } from '@berth/core/backend-kit';

/**
 * Container creations, and removals, one backend instance has in flight on the engine at once.
 * Measured on Docker 20.10 with 2 cores (bench/docker-scale.mjs): 1,000 force-removals at once
 * outran dockerd's 10 s wait for a killed container and containerd's deadline for deleting its
 * shim; the engine answered every removal with success but kept ~700 containerd-shim processes
 * (13 MB and 11 threads each: 9 GB and a third of the PID space) and listed dozens of containers
 * "Removal In Progress" that it no longer had, until it restarted. 1,000 creations at once started
 * the same 1,000 sandboxes 1.8x slower than 16 at a time. At 16, each call answers within seconds
 * and the engine's rate is what it was: its work is one queue on its cores, not more in parallel.
 */
export const ENGINE_CALLS_AT_ONCE = 16;

/** The Docker backend's creation limits when options.creation is unset. */
export const DEFAULT_CREATION: CreationLimits = { maxConcurrent: ENGINE_CALLS_AT_ONCE };

/** One queue for a backend instance's container removals (teardowns; sweep has its own bound). */
export function removalLimiter(): CreationLimiter {
  return new CreationLimiter({ maxConcurrent: ENGINE_CALLS_AT_ONCE });
}
