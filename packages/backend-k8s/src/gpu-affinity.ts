import type { V1Affinity } from '@kubernetes/client-node';
import type { EnvironmentSpec } from '@berth/core';
import type { K8sBackendOptions } from './options.js';

/** The node label NVIDIA's GPU feature discovery sets to the GPU's model, e.g. NVIDIA-H100-80GB-HBM3. */
export const DEFAULT_GPU_TYPE_LABEL = 'nvidia.com/gpu.product';

/**
 * The label values a pod may land on for `resources.gpuTypes`: each type through
 * options.gpuTypeValues (one value or several), else as written; repeats dropped.
 */
export function gpuLabelValues(types: readonly string[], options: Pick<K8sBackendOptions, 'gpuTypeValues'>): string[] {
  const values = types.flatMap((type) => {
    const mapped = options.gpuTypeValues?.[type];
    return mapped === undefined ? [type] : typeof mapped === 'string' ? [mapped] : [...mapped];
  });
  return [...new Set(values)];
}

/**
 * GPU types as a required node affinity: the pod is scheduled only on a node whose GPU label is one
 * of the types' values (any of them, as harbor's gpu_types means). Undefined when the spec names none.
 */
export function gpuAffinity(spec: EnvironmentSpec, options: Pick<K8sBackendOptions, 'gpuTypeLabel' | 'gpuTypeValues'>): V1Affinity | undefined {
  const types = spec.resources.gpuTypes;
  if (!types?.length || !((spec.resources.gpus ?? 0) > 0)) return undefined;
  const key = options.gpuTypeLabel ?? DEFAULT_GPU_TYPE_LABEL;
  return {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{ matchExpressions: [{ key, operator: 'In', values: gpuLabelValues(types, options) }] }],
      },
    },
  };
}
