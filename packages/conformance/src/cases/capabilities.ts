import { CapabilityError, type EnvironmentSpecInput } from '@berth/core';
import { describe, expect } from 'vitest';
import type { Harness } from '../harness.js';

export function capabilityCases(h: Harness): void {
  describe('capabilities', () => {
    /** Specs asking for what the backend says it cannot do; each must be refused before any I/O. */
    const refusals = (): Array<[string, EnvironmentSpecInput]> => {
      const caps = h.backend().capabilities;
      const out: Array<[string, EnvironmentSpecInput]> = [];
      if (!caps.gpus) out.push(['gpus', h.spec({ resources: { gpus: 1 } })]);
      for (const mode of ['public', 'none'] as const) {
        if (!caps.networkModes.includes(mode)) out.push([`network ${mode}`, h.spec({ network: mode })]);
      }
      if (!caps.mounts.includes('image')) {
        out.push(['image mounts', h.spec({ mounts: [{ type: 'image', image: h.options.images.basic, target: '/opt/runtime' }] })]);
      }
      if (!caps.mounts.includes('bind')) {
        out.push(['bind mounts', h.spec({ mounts: [{ type: 'bind', source: '/tmp', target: '/mnt/host' }] })]);
      }
      return out;
    };

    h.defineCase({
      id: 'capabilities.refused',
      title: 'a spec asking for a capability the backend does not claim is a CapabilityError, before any I/O',
      unsupported: () => (refusals().length === 0 ? 'the backend claims every capability this case can refuse' : undefined),
      run: async () => {
        for (const [what, spec] of refusals()) {
          let syncError: unknown;
          try {
            h.track(h.backend().environment(spec));
          } catch (error) {
            syncError = error;
          }
          expect(CapabilityError.isInstance(syncError), `environment() with ${what} must throw a CapabilityError synchronously`).toBe(true);
          const error = await h.expectStartFailure(spec, CapabilityError);
          expect(error.category).toBe('permanent_infra');
          expect(error.retryable).toBe(false);
          expect(error.capability.length).toBeGreaterThan(0);
        }
      },
    });

    h.defineCase({
      id: 'capabilities.network-none',
      title: "network 'none' leaves the sandbox only a loopback interface",
      unsupported: () => (h.backend().capabilities.networkModes.includes('none') ? undefined : "the backend does not claim network 'none'"),
      run: async () => {
        await h.withEnv({ network: 'none' }, async (env) => {
          const r = await env.exec(['cat', '/proc/net/dev']);
          expect(r.exitCode).toBe(0);
          const interfaces = r.stdout
            .split('\n')
            .slice(2)
            .map((line) => line.split(':')[0]?.trim() ?? '')
            .filter((name) => name.length > 0);
          expect(interfaces).toEqual(['lo']);
        });
      },
    });
  });
}
