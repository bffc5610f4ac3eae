import { CapabilityError, ConfigError, type CapabilityHints, type EnvironmentSpecInput } from '@berth/core';
import { describe, expect } from 'vitest';
import type { Harness } from '../harness.js';
import type { ReachableListener } from '../options.js';
import { publicControls, reaches, resolves } from './network-probes.js';

export function capabilityCases(h: Harness): void {
  describe('capabilities', () => {
    /**
     * Specs asking for what the backend says it cannot do, each with the capability its refusal
     * must name (a key of CapabilityHints); each must be refused before any I/O.
     */
    const refusals = (): Array<[string, EnvironmentSpecInput, keyof CapabilityHints]> => {
      const caps = h.backend().capabilities;
      const out: Array<[string, EnvironmentSpecInput, keyof CapabilityHints]> = [];
      if (!caps.gpus) out.push(['gpus', h.spec({ resources: { gpus: 1 } }), 'gpus']);
      else if (!caps.gpuTypes) out.push(['GPU types', h.spec({ resources: { gpus: 1, gpuTypes: ['H100'] } }), 'gpuTypes']);
      for (const mode of ['public', 'none'] as const) {
        if (!caps.networkModes.includes(mode)) out.push([`network ${mode}`, h.spec({ network: mode }), 'network']);
      }
      if (!caps.mounts.includes('image')) {
        out.push(['image mounts', h.spec({ mounts: [{ type: 'image', image: h.options.images.basic, target: '/opt/runtime' }] }), 'mounts.image']);
      }
      if (!caps.imageBuild) out.push(['image builds', h.spec({ image: { build: { context: '/tmp' } } }), 'imageBuild']);
      if (!caps.networkSwitch) out.push(['network switching', h.spec({ networkSwitch: true }), 'networkSwitch']);
      if (!caps.mounts.includes('bind')) {
        out.push(['bind mounts', h.spec({ mounts: [{ type: 'bind', source: '/tmp', target: '/mnt/host' }] }), 'mounts.bind']);
      }
      return out;
    };

    h.defineCase({
      id: 'capabilities.refused',
      title: 'a spec asking for a capability the backend does not claim is a CapabilityError, before any I/O',
      unsupported: () => (refusals().length === 0 ? 'the backend claims every capability this case can refuse' : undefined),
      run: async () => {
        for (const [what, spec, capability] of refusals()) {
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
          expect(error.capability, `the capability named by the refusal of ${what}`).toBe(capability);
        }
      },
    });

    /** Why the network cases cannot run without a listener (undefined when they can). */
    const noListener = () => (h.options.reachableListener ? undefined : 'no reachableListener option: nothing to prove the sandbox would otherwise reach');
    const withListener = async (fn: (listener: ReachableListener) => Promise<void>) => {
      const start = h.options.reachableListener;
      if (!start) throw new Error('unreachable: the case is skipped without reachableListener');
      const listener = await start();
      try {
        await fn(listener);
      } finally {
        await listener.close();
      }
    };

    h.defineCase({
      id: 'capabilities.network-none',
      title: "network 'none': no packet enters or leaves but on loopback (a listener and a DNS responder a public sandbox reaches are not reached)",
      unsupported: noListener,
      // The positive controls may try three sandboxes before they give up.
      timeoutMs: 180_000,
      run: () =>
        withListener(async (listener) => {
          // Proved first, so the refusal below cannot pass vacuously.
          await publicControls(h, [
            [(env) => reaches(env, listener), `a public sandbox must reach ${listener.host}:${listener.port}`],
            [(env) => resolves(env, listener), `a public sandbox must resolve through ${listener.host}:${listener.dnsPort}`],
          ]);
          await h.withEnv({ network: 'none' }, async (env) => {
            expect(env.network).toBe('none');
            expect(await reaches(env, listener), `a sandbox on network 'none' reached ${listener.host}:${listener.port}`).toBe(false);
            expect(await resolves(env, listener), "a DNS lookup reached the responder on network 'none'").toBe(false);
            // Loopback stays.
            expect((await env.exec(['sh', '-c', 'cat /proc/net/dev'])).stdout).toMatch(/\blo:/);
            // Switching needs a sandbox made for it.
            const error = await env.setNetwork('public').then(
              () => undefined,
              (e: unknown) => e,
            );
            expect(ConfigError.isInstance(error) && error.path).toBe('spec.networkSwitch');
          });
        }),
    });

    h.defineCase({
      id: 'capabilities.network-switch',
      title: 'a sandbox made with networkSwitch starts on spec.network and moves between none and public, each state holding when setNetwork returns',
      unsupported: noListener,
      timeoutMs: 120_000,
      run: () =>
        withListener(async (listener) => {
          await h.withEnv({ network: 'none', networkSwitch: true }, async (env) => {
            expect(await reaches(env, listener), "reached the listener while on network 'none'").toBe(false);
            expect(await resolves(env, listener), "a DNS lookup reached the responder while on network 'none'").toBe(false);
            await env.setNetwork('public');
            expect(env.network).toBe('public');
            expect(await reaches(env, listener), 'did not reach the listener once setNetwork(public) returned').toBe(true);
            expect(await resolves(env, listener), 'did not resolve through the responder once setNetwork(public) returned').toBe(true);
            await env.setNetwork('public'); // already there: nothing to do
            await env.setNetwork('none');
            expect(env.network).toBe('none');
            expect(await reaches(env, listener), 'reached the listener once setNetwork(none) returned').toBe(false);
            expect(await resolves(env, listener), "a DNS lookup reached the responder on network 'none'").toBe(false);
            await env.setNetwork('public');
            expect(await reaches(env, listener), 'switching back to public did not restore the network').toBe(true);
            const bad = await env.setNetwork('bogus' as 'none').then(
              () => undefined,
              (e: unknown) => e,
            );
            expect(ConfigError.isInstance(bad) && bad.path).toBe('mode');
          });
        }),
    });
  });
}
