import type { Resources } from '@berth/core';

/**
 * Resources.gpu_config as Modal's own client makes it from `gpu="H100:2"`: the type upper-cased,
 * the count beside it. A count without a type is Modal's "any" (`gpu="any"`). A sandbox takes one
 * GPU type (the client refuses a list for sandboxes; fallback lists are for Functions), so of
 * `gpuTypes`, any of which the task accepts, the first is asked for.
 */
export function gpuConfig(resources: Resources): { gpu_config?: { gpu_type: string; count: number } } {
  const count = resources.gpus ?? 0;
  if (count <= 0) return {};
  return { gpu_config: { gpu_type: (resources.gpuTypes?.[0] ?? 'any').toUpperCase(), count } };
}
