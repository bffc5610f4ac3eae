// The pod's lifetime without a cluster: activeDeadlineSeconds from the spec's timeouts.lifetimeMs,
// else the backend's defaultLifetimeMs (24 h; false: none), the factory's refusals, and how a pod's
// status says which of the two ended it.
import { describe, expect, it } from 'vitest';
import type { V1Pod } from '@kubernetes/client-node';
import { ConfigError, type EnvironmentSpec } from '@berth/core';
import { parseEnvironmentSpec } from '@berth/core/backend-kit';
import { createK8sBackend, type K8sBackendOptions } from '@berth/backend-k8s';
import { ANNOTATION_DEFAULT_LIFETIME, podManifest } from '../src/pod-manifest.js';
import { liveState } from '../src/pod-status.js';

const spec = (timeouts: Record<string, number> = {}): EnvironmentSpec => parseEnvironmentSpec({ image: 'busybox:1', network: 'public', timeouts });
const pod = (s: EnvironmentSpec, options: K8sBackendOptions = {}) =>
  podManifest({ name: 'berth-1', namespace: 'ns', image: 'busybox:1', spec: s, labels: {}, pullSecrets: [], options });

describe('the pod lifetime', () => {
  it('no lifetime in the spec: the default, 24 h, as activeDeadlineSeconds, annotated as the default', () => {
    const p = pod(spec());
    expect(p.spec?.activeDeadlineSeconds).toBe(86_400);
    expect(p.metadata?.annotations).toEqual({ [ANNOTATION_DEFAULT_LIFETIME]: '86400000' });
    // The keep-alive keeps no clock of its own for a default: the cluster ends the pod.
    expect(p.spec?.containers[0]?.command?.join(' ')).toContain('while :');
  });

  it('defaultLifetimeMs sets it (rounded up to whole seconds); the annotation sits beside the options annotations', () => {
    const p = pod(spec(), { defaultLifetimeMs: 2500, annotations: { 'example.com/run': 'r1' } });
    expect(p.spec?.activeDeadlineSeconds).toBe(3);
    expect(p.metadata?.annotations).toEqual({ 'example.com/run': 'r1', [ANNOTATION_DEFAULT_LIFETIME]: '2500' });
  });

  it("the spec's timeouts.lifetimeMs wins over the default, and is not annotated as one", () => {
    const p = pod(spec({ lifetimeMs: 600_000 }), { defaultLifetimeMs: 3000 });
    expect(p.spec?.activeDeadlineSeconds).toBe(600);
    expect(p.metadata?.annotations).toBeUndefined();
  });

  it('defaultLifetimeMs: false is no default: no deadline, no annotation (a spec lifetime still applies)', () => {
    const off = pod(spec(), { defaultLifetimeMs: false });
    expect(off.spec?.activeDeadlineSeconds).toBeUndefined();
    expect(off.metadata?.annotations).toBeUndefined();
    expect(pod(spec({ lifetimeMs: 4000 }), { defaultLifetimeMs: false }).spec?.activeDeadlineSeconds).toBe(4);
  });

  it('the factory refuses a value that is not a lifetime, before any I/O, naming the option', () => {
    for (const bad of [0, -1000, 1.5, '24h', null, true]) {
      let error: unknown;
      try {
        createK8sBackend({ kubeconfig: { file: '/nonexistent' }, defaultLifetimeMs: bad as never });
      } catch (e) {
        error = e;
      }
      expect(ConfigError.isInstance(error), `${String(bad)}: ${String(error)}`).toBe(true);
      expect((error as ConfigError).path).toBe('options.defaultLifetimeMs');
      expect((error as Error).message).toMatch(/^createK8sBackend's defaultLifetimeMs is a whole number of milliseconds above 0, or false for none/);
    }
    // Kubernetes has no ceiling of its own; false is accepted.
    expect(() => createK8sBackend({ kubeconfig: { file: '/nonexistent' }, defaultLifetimeMs: 30 * 86_400_000 })).not.toThrow();
    expect(() => createK8sBackend({ kubeconfig: { file: '/nonexistent' }, defaultLifetimeMs: false })).not.toThrow();
  });
});

describe("the pod's end", () => {
  const started = { uid: 'u1', restarts: 0 };
  const ended = (annotations: Record<string, string> | undefined, status: V1Pod['status']): V1Pod => ({
    metadata: { uid: 'u1', ...(annotations ? { annotations } : {}) },
    status,
  });
  const deadline = {
    phase: 'Failed',
    reason: 'DeadlineExceeded',
    message: 'Pod was active on the node longer than the specified deadline',
    containerStatuses: [{ name: 'main', image: 'x', imageID: 'x', ready: false, restartCount: 0, state: { terminated: { exitCode: 137, reason: 'Error' } } }],
  };

  it('DeadlineExceeded on a pod whose deadline was the default: the lifetime, with the default it was', () => {
    expect(liveState(ended({ [ANNOTATION_DEFAULT_LIFETIME]: '3000' }, deadline), started)).toEqual({
      running: false,
      reason: 'DeadlineExceeded: Pod was active on the node longer than the specified deadline',
      lifetimeExpired: true,
      defaultLifetimeMs: 3000,
    });
  });

  it("DeadlineExceeded on a pod with the spec's own lifetime: the lifetime, no default named", () => {
    const state = liveState(ended(undefined, deadline), started);
    expect(state).toMatchObject({ running: false, lifetimeExpired: true });
    expect(state).not.toHaveProperty('defaultLifetimeMs');
  });

  it('on a pod with the default, a keep-alive that exited 0 (a TERM from an eviction) is not the lifetime: its keep-alive has no clock', () => {
    const evicted = {
      phase: 'Failed',
      reason: 'Evicted',
      containerStatuses: [
        { name: 'main', image: 'x', imageID: 'x', ready: false, restartCount: 0, state: { terminated: { exitCode: 0, reason: 'Completed' } } },
      ],
    };
    const state = liveState(ended({ [ANNOTATION_DEFAULT_LIFETIME]: '86400000' }, evicted), started);
    expect(state).toMatchObject({ running: false, reason: 'Evicted', lifetimeExpired: false });
    expect(state).not.toHaveProperty('defaultLifetimeMs');
  });
});
