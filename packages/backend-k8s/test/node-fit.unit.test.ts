// The scheduler's first filters as preflight applies them (pure: no cluster needed).
import { describe, expect, it } from 'vitest';
import type { V1Node, V1Pod, V1Taint } from '@kubernetes/client-node';
import { nodeMisfits, quantity, tolerates } from '../src/node-fit.js';

const node = (
  over: Partial<{ taints: V1Taint[]; ready: string; labels: Record<string, string>; cpu: string; memory: string; unschedulable: boolean }> = {},
): V1Node => ({
  metadata: { name: 'n1', labels: over.labels ?? { zone: 'a' } },
  spec: { taints: over.taints ?? [], unschedulable: over.unschedulable ?? false },
  status: {
    conditions: [{ type: 'Ready', status: over.ready ?? 'True', reason: 'KubeletReady' }],
    allocatable: { cpu: over.cpu ?? '4', memory: over.memory ?? '16Gi' },
  },
});
const pod = (spec: V1Pod['spec'] = { containers: [] }): V1Pod => ({ spec });

describe('nodeMisfits', () => {
  it('a Ready node without taints fits a pod without requests', () => {
    expect(nodeMisfits(node(), pod())).toEqual([]);
  });

  it('names a DiskPressure taint the pod does not tolerate, and ignores PreferNoSchedule', () => {
    const n = node({
      taints: [
        { key: 'node.kubernetes.io/disk-pressure', effect: 'NoSchedule' },
        { key: 'soft', effect: 'PreferNoSchedule' },
      ],
    });
    expect(nodeMisfits(n, pod())).toEqual(['taint node.kubernetes.io/disk-pressure:NoSchedule not tolerated']);
    const tolerating = pod({ containers: [], tolerations: [{ key: 'node.kubernetes.io/disk-pressure', operator: 'Exists' }] });
    expect(nodeMisfits(n, tolerating)).toEqual([]);
  });

  it('reports a node that is not Ready, cordoned, or has the wrong labels', () => {
    const reasons = nodeMisfits(node({ ready: 'False', unschedulable: true }), pod({ containers: [], nodeSelector: { zone: 'b' } }));
    expect(reasons).toEqual(['not Ready (KubeletReady)', 'cordoned (unschedulable)', 'nodeSelector zone=b does not match']);
  });

  it('compares requests with what the node has in all', () => {
    const big = pod({ containers: [{ name: 'main', resources: { requests: { cpu: '8000m', memory: '1Gi', 'nvidia.com/gpu': '1' } } }] });
    expect(nodeMisfits(node(), big)).toEqual(['cpu: the pod asks 8000m, the node has 4 in all', 'has no nvidia.com/gpu']);
  });
});

describe('tolerates', () => {
  const taint = { key: 'k', value: 'v', effect: 'NoSchedule' };
  it('follows the scheduler: Equal needs key and value, Exists only the key, an empty key with Exists tolerates everything', () => {
    expect(tolerates({ key: 'k', operator: 'Equal', value: 'v' }, taint)).toBe(true);
    expect(tolerates({ key: 'k', value: 'other' }, taint)).toBe(false);
    expect(tolerates({ key: 'k', operator: 'Exists' }, taint)).toBe(true);
    expect(tolerates({ operator: 'Exists' }, taint)).toBe(true);
    expect(tolerates({ key: 'k', operator: 'Exists', effect: 'NoExecute' }, taint)).toBe(false);
  });
});

describe('quantity', () => {
  it('reads Kubernetes quantities', () => {
    expect(quantity('500m')).toBe(0.5);
    expect(quantity('2')).toBe(2);
    expect(quantity('1Gi')).toBe(2 ** 30);
    expect(quantity('1G')).toBe(1e9);
    expect(quantity('128974848')).toBe(128974848);
    expect(quantity('1e3')).toBe(1000);
    expect(Number.isNaN(quantity('lots'))).toBe(true);
  });
});
