import { CapabilityError, ConfigError, type Environment, type EnvironmentSpecInput } from '@berth/core';
import { describe, expect } from 'vitest';
import type { Harness } from '../harness.js';

/** The sandbox's network interfaces, from /proc/net/dev (no tools needed in the image). */
async function interfaces(env: Environment): Promise<string[]> {
  const r = await env.exec(['cat', '/proc/net/dev']);
  expect(r.exitCode).toBe(0);
  return r.stdout
    .split('\n')
    .slice(2)
    .map((line) => line.split(':')[0]?.trim() ?? '')
    .filter((name) => name.length > 0);
}

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
      if (!caps.imageBuild) out.push(['image builds', h.spec({ image: { build: { context: '/tmp' } } })]);
      if (!caps.networkSwitch) out.push(['network switching', h.spec({ networkSwitch: true })]);
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
          expect(await interfaces(env)).toEqual(['lo']);
          expect(env.network).toBe('none');
          // Switching needs a sandbox made for it.
          const error = await env.setNetwork('public').then(
            () => undefined,
            (e: unknown) => e,
          );
          expect(ConfigError.isInstance(error) && error.path).toBe('spec.networkSwitch');
        });
      },
    });

    h.defineCase({
      id: 'capabilities.network-switch',
      title: 'a sandbox made with networkSwitch starts on spec.network and moves between none and public (nothing is sent)',
      unsupported: () => (h.backend().capabilities.networkSwitch ? undefined : 'the backend does not claim networkSwitch'),
      run: async () => {
        await h.withEnv({ network: 'none', networkSwitch: true }, async (env) => {
          expect(await interfaces(env)).toEqual(['lo']);
          await env.setNetwork('public');
          expect(env.network).toBe('public');
          expect((await interfaces(env)).filter((i) => i !== 'lo').length).toBeGreaterThan(0);
          await env.setNetwork('public'); // already there: nothing to do
          await env.setNetwork('none');
          expect(env.network).toBe('none');
          expect(await interfaces(env)).toEqual(['lo']);
          const bad = await env.setNetwork('bogus' as 'none').then(
            () => undefined,
            (e: unknown) => e,
          );
          expect(ConfigError.isInstance(bad) && bad.path).toBe('mode');
        });
      },
    });
  });
}
